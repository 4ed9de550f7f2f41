// SPDX-License-Identifier: MIT
/*
 * iotrace_probe IMAGE OTHER: one call of each kind the preload library wraps,
 * at known offsets of IMAGE (tests/test_iobounds.py checks the records), and
 * reads of OTHER, which must leave none. IMAGE must be at least 64 KiB.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static char buf[4096];

static void fail(const char *what)
{
	perror(what);
	exit(1);
}

static void descriptors(const char *image)
{
	struct iovec iov[2] = { { buf, 30 }, { buf + 100, 70 } };
	int fd = open(image, O_RDWR);
	int d, at;
	void *p;

	if (fd < 0)
		fail("open");
	if (read(fd, buf, 100) != 100)                      /* r read 0 100 */
		fail("read");
	lseek(fd, 1000, SEEK_SET);
	if (read(fd, buf, 50) != 50)                        /* r read 1000 50 */
		fail("read");
	if (pread(fd, buf, 10, 5000) != 10)                 /* r pread64 5000 10 */
		fail("pread");
	if (readv(fd, iov, 2) != 100)                       /* r readv 1050 100 */
		fail("readv");
	if (preadv(fd, iov, 2, 7000) != 100)                /* r preadv64 7000 100 */
		fail("preadv");
	lseek(fd, 8000, SEEK_SET);
	if (write(fd, buf, 20) != 20)                       /* w write 8000 20 */
		fail("write");
	if (pwrite(fd, buf, 30, 9000) != 30)                /* w pwrite64 9000 30 */
		fail("pwrite");
	if (writev(fd, iov, 2) != 100)                      /* w writev 8020 100 */
		fail("writev");
	if (pwritev(fd, iov, 2, 10000) != 100)              /* w pwritev64 10000 100 */
		fail("pwritev");
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 8192);   /* m mmap64 8192 4096 */
	if (p == MAP_FAILED)
		fail("mmap");
	munmap(p, 4096);
	d = dup(fd);
	if (pread(d, buf, 11, 11000) != 11)                 /* r pread64 11000 11 (dup) */
		fail("pread dup");
	if (dup2(fd, 40) != 40 || pread(40, buf, 12, 12000) != 12)   /* r pread64 12000 12 */
		fail("dup2");
	if (ftruncate(fd, lseek(fd, 0, SEEK_END)) != 0)     /* t ftruncate64 size */
		fail("ftruncate");
	close(d);
	close(40);
	close(fd);
	if (pread(fd, buf, 1, 0) >= 0)                      /* closed: no record */
		fail("closed fd read");
	at = openat(AT_FDCWD, image, O_RDONLY);
	if (at < 0 || pread(at, buf, 13, 13000) != 13)      /* r pread64 13000 13 */
		fail("openat");
	close(at);
}

static void streams(const char *image)
{
	struct stat st;
	FILE *f = fopen(image, "r+b");

	if (!f || stat(image, &st) < 0)
		fail("fopen");
	fseek(f, 3000, SEEK_SET);
	if (fread(buf, 1, 64, f) != 64)                     /* r fread 3000 64 */
		fail("fread");
	fseek(f, 3064, SEEK_SET);
	if (fwrite(buf, 2, 8, f) != 8)                      /* w fwrite 3064 16 */
		fail("fwrite");
	fseek(f, st.st_size - 10, SEEK_SET);
	if (fread(buf, 1, 100, f) != 10)                    /* r fread size-10 100 -> 10 */
		fail("fread at end");
	fclose(f);
}

int main(int argc, char **argv)
{
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: iotrace_probe IMAGE OTHER\n");
		return 2;
	}
	fd = open(argv[2], O_RDONLY);
	if (fd < 0 || read(fd, buf, 10) < 0)
		fail("other");
	close(fd);
	descriptors(argv[1]);
	streams(argv[1]);
	printf("ok\n");
	return 0;
}
