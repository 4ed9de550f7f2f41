"""What a sanitizer (ASan, LSan, UBSan) reported in a program's output, as one line a signature can hold.

The fuzzer's judge (vfz.campaign.fuzzer.crash_line) and the core writer run by
the ASan build (vfz.oracles.core, writer core-asan) both name a memory error by
its kind and the function it happened in, not by its addresses: two over-reads
in two functions are two findings, one over-read found twice is one.
"""
import os
import re

_ASAN_SUMMARY = re.compile(r"SUMMARY: AddressSanitizer: (\S+) (\S+) in (\S+)")
_UBSAN = re.compile(r"^(\S+?):(\d+):(\d+): runtime error: (.*)$")


def asan_summary(lines):
    """'AddressSanitizer: KIND in FUNCTION (FILE)' from ASan's SUMMARY line, or None."""
    for ln in lines:
        m = _ASAN_SUMMARY.match(ln.strip())
        if m:
            return f"AddressSanitizer: {m[1]} in {m[3]} ({os.path.basename(m[2])})"
    return None


def report_line(text):
    """The sanitizer's report in text as one line, or None when it reported nothing:
    ASan's kind and function, UBSan's runtime error with its file's base name and line,
    LeakSanitizer's first leak."""
    lines = text.splitlines()
    if any("ERROR: AddressSanitizer" in ln for ln in lines):
        return asan_summary(lines) or next(ln.strip() for ln in lines if "ERROR: AddressSanitizer" in ln)
    for ln in lines:
        m = _UBSAN.match(ln.strip())
        if m:
            return f"{os.path.basename(m[1])}:{m[2]}: runtime error: {m[4]}"
    if any("ERROR: LeakSanitizer" in ln for ln in lines):
        first = next((ln.strip() for ln in lines if ln.strip().startswith("#") and " in " in ln
                      and "malloc" not in ln and "calloc" not in ln and "realloc" not in ln), "")
        return "LeakSanitizer: detected memory leaks" + (f" ({first.split(' in ', 1)[1].split()[0]})"
                                                         if first else "")
    return None
