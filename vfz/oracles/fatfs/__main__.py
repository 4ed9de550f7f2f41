"""`python3 -m vfz.oracles.fatfs --casefold`: re-measure casefold.json on FatFs itself."""
import sys

from vfz.oracles.fatfs import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
