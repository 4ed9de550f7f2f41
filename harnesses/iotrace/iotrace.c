// SPDX-License-Identifier: MIT
/*
 * libvfz_iotrace.so: an LD_PRELOAD library that records every access a tool
 * makes to one volume image (vfz/iobounds.py runs tools under it and judges
 * the trace; docs/iobounds.md).
 *
 * Environment (read once, in the constructor):
 *   VFZ_IOTRACE_FILE   the trace: text lines appended with one write(2) each
 *   VFZ_IOTRACE_IMAGE  the image path(s) to watch, ':'-separated; an open
 *                      is the image's when the new fd's (st_dev, st_ino) is
 *                      one of theirs, whatever path or link opened it
 *   VFZ_IOTRACE_SIZE   the volume's declared size in bytes (0: unknown); an
 *                      access that ends past it is always written, others
 *                      only up to VFZ_IOTRACE_MAX records (then counted)
 *   VFZ_IOTRACE_MAX    in-bounds records per process (default 200000)
 *   VFZ_IOTRACE_OP     the op or command this process runs, written in its
 *                      header line
 * Without VFZ_IOTRACE_FILE and VFZ_IOTRACE_IMAGE every wrapper only calls
 * through.
 *
 * Lines (numbers decimal; a result is bytes done or -errno):
 *   h PID PPID OP                       the first line of a process
 *   o PID FD CALL FLAGS                 the image opened
 *   r PID FD CALL OFFSET LENGTH RESULT  read LENGTH bytes asked at OFFSET
 *   w PID FD CALL OFFSET LENGTH RESULT  write
 *   m PID FD CALL OFFSET LENGTH PROT FLAGS   a mapping of the image
 *   t PID FD CALL LENGTH RESULT         ftruncate to LENGTH
 *   d PID FD NEWFD                      the image's fd duplicated
 *   x PID WRITTEN DROPPED               at exit: records written, dropped
 * Accesses through a mapping never reach a call: the mapping itself is what
 * is recorded (its whole range counts as accessed).
 *
 * Why these calls: the tools' imports (objdump -T, Debian 12) are open,
 * __open_2/__open64_2, open64/openat64, fopen/fopen64, read, __read_chk,
 * lseek64, fread/__fread_chk, write, fwrite, ftruncate64, dup/dup2; the
 * rest of the family is wrapped for other tools. glibc's own calls inside
 * stdio (fread -> read) are internal and reach no wrapper, so an fread is
 * recorded once, at the FILE's position (ftello) -- what the tool asked
 * for, not stdio's buffer refills. Seeks are not wrapped: the offset of
 * read/write is asked of the kernel (lseek(fd, 0, SEEK_CUR)) at each call.
 *
 * Never changing the tool: errno is kept across the bookkeeping, the trace
 * fd is moved above 512 (close-on-exec; the library of an exec'd child
 * opens its own), a close() of it by the tool forgets it, nothing is
 * allocated after the constructor, and records are formatted on the stack
 * and written with the raw syscall (async-signal-safe: a tool's signal
 * handler that reads the image is recorded too).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* stdio.h makes these macros at -O2; the library defines the functions */
#undef fread_unlocked
#undef fwrite_unlocked

#define MAX_FDS 4096
#define MAX_IMAGES 8
#define OP_LEN 512
#define TRACE_FD_MIN 512

struct img_id {
	dev_t dev;
	ino_t ino;
};

static int trace_fd = -1;
static int active;
static struct img_id images[MAX_IMAGES];
static int n_images;
static unsigned long long declared;     /* bytes; 0 = unknown */
static unsigned long long max_records = 200000;
static char op[OP_LEN];
static unsigned char watched[MAX_FDS];
static unsigned long long written, dropped;
static pid_t header_pid;

/* ------------------------------------------------------------ real calls */

#define REAL(name) static __typeof__(name) *real_##name
/* the next definition (libc's), looked up at the first call: a call can
 * come before this library's constructor (another library's constructor) */
#define RESOLVE(name) ({ \
	if (!real_##name) \
		real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name); \
	real_##name; \
})

/* fortified entry points: declared here, the headers only do so under
 * _FORTIFY_SOURCE */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
size_t __fread_chk(void *ptr, size_t ptrlen, size_t size, size_t n, FILE *fp);
size_t __fread_unlocked_chk(void *ptr, size_t ptrlen, size_t size, size_t n, FILE *fp);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

REAL(open); REAL(open64); REAL(openat); REAL(openat64);
REAL(__open_2); REAL(__open64_2); REAL(__openat_2); REAL(__openat64_2);
REAL(creat); REAL(creat64);
REAL(fopen); REAL(fopen64); REAL(freopen); REAL(freopen64);
REAL(read); REAL(__read_chk); REAL(pread); REAL(pread64);
REAL(__pread_chk); REAL(__pread64_chk); REAL(readv); REAL(preadv); REAL(preadv64);
REAL(write); REAL(pwrite); REAL(pwrite64); REAL(writev); REAL(pwritev); REAL(pwritev64);
REAL(fread); REAL(__fread_chk); REAL(fread_unlocked); REAL(__fread_unlocked_chk);
REAL(fwrite); REAL(fwrite_unlocked);
REAL(mmap); REAL(mmap64);
REAL(ftruncate); REAL(ftruncate64);
REAL(close); REAL(fclose); REAL(dup); REAL(dup2); REAL(dup3);

/* ------------------------------------------------------------ records */

struct line {
	char buf[OP_LEN + 160];
	size_t n;
};

static void put_str(struct line *l, const char *s)
{
	while (*s && l->n < sizeof(l->buf) - 2)
		l->buf[l->n++] = *s++;
}

static void put_num(struct line *l, long long v)
{
	char tmp[24];
	int i = 0;
	unsigned long long u = v < 0 ? -(unsigned long long)v : (unsigned long long)v;

	l->buf[l->n++] = ' ';
	if (v < 0)
		l->buf[l->n++] = '-';
	do {
		tmp[i++] = '0' + u % 10;
		u /= 10;
	} while (u);
	while (i)
		l->buf[l->n++] = tmp[--i];
}

static void emit(struct line *l)
{
	l->buf[l->n++] = '\n';
	if (trace_fd >= 0)
		syscall(SYS_write, trace_fd, l->buf, l->n);
}

/* the process's header line, once per pid (a forked child writes its own) */
static void header(void)
{
	struct line l = { .n = 0 };
	pid_t pid = getpid();

	if (pid == header_pid)
		return;
	header_pid = pid;
	written = dropped = 0;
	put_str(&l, "h");
	put_num(&l, pid);
	put_num(&l, getppid());
	l.buf[l.n++] = ' ';
	put_str(&l, op);
	emit(&l);
}

static void start(struct line *l, char kind, int fd, const char *call)
{
	header();
	l->n = 0;
	l->buf[l->n++] = kind;
	put_num(l, getpid());
	put_num(l, fd);
	l->buf[l->n++] = ' ';
	put_str(l, call);
}

/* an access of len bytes at off: written when past the declared volume or
 * while the cap allows */
static void access_rec(char kind, int fd, const char *call, long long off,
		       long long len, long long res)
{
	struct line l;
	int past = declared && (unsigned long long)(off + len) > declared;

	if (!past && written >= max_records) {
		header();
		dropped++;
		return;
	}
	start(&l, kind, fd, call);
	put_num(&l, off);
	put_num(&l, len);
	put_num(&l, res);
	emit(&l);
	written++;
}

/* ------------------------------------------------------------ image fds */

static int is_watched(int fd)
{
	return active && fd >= 0 && fd < MAX_FDS && watched[fd];
}

static void watch_if_image(int fd, const char *call, int flags)
{
	struct stat st;
	struct line l;
	int i;

	if (!active || fd < 0 || fd >= MAX_FDS)
		return;
	watched[fd] = 0;
	if (fstat(fd, &st) < 0)
		return;
	for (i = 0; i < n_images; i++)
		if (images[i].dev == st.st_dev && images[i].ino == st.st_ino)
			break;
	if (i == n_images)
		return;
	watched[fd] = 1;
	start(&l, 'o', fd, call);
	put_num(&l, flags);
	emit(&l);
}

static void forget(int fd)
{
	if (fd == trace_fd)
		trace_fd = -1;          /* the tool closed it: never write there again */
	if (fd >= 0 && fd < MAX_FDS)
		watched[fd] = 0;
}

static void dup_rec(int fd, int newfd)
{
	struct line l;

	if (newfd < 0 || newfd >= MAX_FDS)
		return;
	if (newfd == trace_fd)
		trace_fd = -1;
	watched[newfd] = 1;
	start(&l, 'd', fd, "dup");
	put_num(&l, newfd);
	emit(&l);
}

static long long position(int fd)
{
	return syscall(SYS_lseek, fd, 0L, SEEK_CUR);
}

static long long result(long long r)
{
	return r < 0 ? -errno : r;
}

static long long iov_len(const struct iovec *iov, int n)
{
	long long s = 0;
	int i;

	for (i = 0; i < n; i++)
		s += iov[i].iov_len;
	return s;
}

/* ------------------------------------------------------------ setup */

static void add_image(const char *path)
{
	struct stat st;

	if (n_images < MAX_IMAGES && stat(path, &st) == 0) {
		images[n_images].dev = st.st_dev;
		images[n_images].ino = st.st_ino;
		n_images++;
	}
}

static void parse_images(const char *list)
{
	char path[4096];
	size_t n = 0;

	for (;; list++) {
		if (*list == ':' || *list == '\0') {
			path[n] = '\0';
			if (n)
				add_image(path);
			n = 0;
			if (!*list)
				break;
		} else if (n < sizeof(path) - 1) {
			path[n++] = *list;
		}
	}
}

static int open_trace(const char *path)
{
	int fd = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	int hi;

	if (fd < 0)
		return -1;
	hi = fcntl(fd, F_DUPFD_CLOEXEC, TRACE_FD_MIN);
	syscall(SYS_close, fd);
	return hi;
}

__attribute__((constructor)) static void iotrace_init(void)
{
	const char *file = getenv("VFZ_IOTRACE_FILE");
	const char *imgs = getenv("VFZ_IOTRACE_IMAGE");
	const char *s;
	int saved = errno;

	if (file && imgs && *file && *imgs) {
		parse_images(imgs);
		if ((s = getenv("VFZ_IOTRACE_SIZE")))
			declared = strtoull(s, NULL, 0);
		if ((s = getenv("VFZ_IOTRACE_MAX")))
			max_records = strtoull(s, NULL, 0);
		if ((s = getenv("VFZ_IOTRACE_OP"))) {
			strncpy(op, s, OP_LEN - 1);
			for (char *c = op; *c; c++)
				if (*c == '\n')
					*c = ' ';
		}
		trace_fd = open_trace(file);
		active = n_images > 0 && trace_fd >= 0;
	}
	errno = saved;
}

__attribute__((destructor)) static void iotrace_fini(void)
{
	struct line l = { .n = 0 };
	int saved = errno;

	if (active && header_pid == getpid()) {
		put_str(&l, "x");
		put_num(&l, getpid());
		put_num(&l, written);
		put_num(&l, dropped);
		emit(&l);
	}
	errno = saved;
}

/* ------------------------------------------------------------ opens */

static int opened(int fd, const char *call, int flags)
{
	int saved = errno;

	if (fd >= 0 && active)
		watch_if_image(fd, call, flags);
	errno = saved;
	return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = mode_arg(flags, ap);
	va_end(ap);
	return opened(RESOLVE(open)(path, flags, m), "open", flags);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = mode_arg(flags, ap);
	va_end(ap);
	return opened(RESOLVE(open64)(path, flags, m), "open64", flags);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = mode_arg(flags, ap);
	va_end(ap);
	return opened(RESOLVE(openat)(dirfd, path, flags, m), "openat", flags);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = mode_arg(flags, ap);
	va_end(ap);
	return opened(RESOLVE(openat64)(dirfd, path, flags, m), "openat64", flags);
}

int __open_2(const char *path, int flags)
{
	return opened(RESOLVE(__open_2)(path, flags), "__open_2", flags);
}

int __open64_2(const char *path, int flags)
{
	return opened(RESOLVE(__open64_2)(path, flags), "__open64_2", flags);
}

int __openat_2(int dirfd, const char *path, int flags)
{
	return opened(RESOLVE(__openat_2)(dirfd, path, flags), "__openat_2", flags);
}

int __openat64_2(int dirfd, const char *path, int flags)
{
	return opened(RESOLVE(__openat64_2)(dirfd, path, flags), "__openat64_2", flags);
}

int creat(const char *path, mode_t m)
{
	return opened(RESOLVE(creat)(path, m), "creat", O_CREAT | O_WRONLY | O_TRUNC);
}

int creat64(const char *path, mode_t m)
{
	return opened(RESOLVE(creat64)(path, m), "creat64", O_CREAT | O_WRONLY | O_TRUNC);
}

static FILE *fopened(FILE *fp, const char *call, const char *mode)
{
	int saved = errno;

	if (fp && active)
		watch_if_image(fileno(fp), call, strchr(mode, '+') || *mode != 'r' ? O_RDWR : O_RDONLY);
	errno = saved;
	return fp;
}

FILE *fopen(const char *path, const char *mode)
{
	return fopened(RESOLVE(fopen)(path, mode), "fopen", mode);
}

FILE *fopen64(const char *path, const char *mode)
{
	return fopened(RESOLVE(fopen64)(path, mode), "fopen64", mode);
}

FILE *freopen(const char *path, const char *mode, FILE *fp)
{
	if (fp && active)
		forget(fileno(fp));
	return fopened(RESOLVE(freopen)(path, mode, fp), "freopen", mode);
}

FILE *freopen64(const char *path, const char *mode, FILE *fp)
{
	if (fp && active)
		forget(fileno(fp));
	return fopened(RESOLVE(freopen64)(path, mode, fp), "freopen64", mode);
}

/* ------------------------------------------------------------ reads */

/* one positioned transfer of fd: off < 0 asks the kernel for the position
 * before the call (read/write move it) */
#define TRANSFER(kind, fd, callname, off, len, expr) do { \
	long long _off = (off), _r; \
	int _w = is_watched(fd), _saved; \
	if (_w && _off < 0) \
		_off = position(fd); \
	_r = (expr); \
	if (_w) { \
		_saved = errno; \
		access_rec(kind, fd, callname, _off, (len), result(_r)); \
		errno = _saved; \
	} \
	return _r; \
} while (0)

ssize_t read(int fd, void *buf, size_t n)
{
	TRANSFER('r', fd, "read", -1, n, RESOLVE(read)(fd, buf, n));
}

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	TRANSFER('r', fd, "__read_chk", -1, n, RESOLVE(__read_chk)(fd, buf, n, buflen));
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	TRANSFER('r', fd, "pread", off, n, RESOLVE(pread)(fd, buf, n, off));
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	TRANSFER('r', fd, "pread64", off, n, RESOLVE(pread64)(fd, buf, n, off));
}

ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	TRANSFER('r', fd, "__pread_chk", off, n, RESOLVE(__pread_chk)(fd, buf, n, off, buflen));
}

ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
	TRANSFER('r', fd, "__pread64_chk", off, n, RESOLVE(__pread64_chk)(fd, buf, n, off, buflen));
}

ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	TRANSFER('r', fd, "readv", -1, iov_len(iov, cnt), RESOLVE(readv)(fd, iov, cnt));
}

ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	TRANSFER('r', fd, "preadv", off, iov_len(iov, cnt), RESOLVE(preadv)(fd, iov, cnt, off));
}

ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	TRANSFER('r', fd, "preadv64", off, iov_len(iov, cnt), RESOLVE(preadv64)(fd, iov, cnt, off));
}

/* ------------------------------------------------------------ writes */

ssize_t write(int fd, const void *buf, size_t n)
{
	TRANSFER('w', fd, "write", -1, n, RESOLVE(write)(fd, buf, n));
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	TRANSFER('w', fd, "pwrite", off, n, RESOLVE(pwrite)(fd, buf, n, off));
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	TRANSFER('w', fd, "pwrite64", off, n, RESOLVE(pwrite64)(fd, buf, n, off));
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	TRANSFER('w', fd, "writev", -1, iov_len(iov, cnt), RESOLVE(writev)(fd, iov, cnt));
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	TRANSFER('w', fd, "pwritev", off, iov_len(iov, cnt), RESOLVE(pwritev)(fd, iov, cnt, off));
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	TRANSFER('w', fd, "pwritev64", off, iov_len(iov, cnt), RESOLVE(pwritev64)(fd, iov, cnt, off));
}

/* ------------------------------------------------------------ stdio */

/* an fread/fwrite of a FILE on the image: recorded at the stream's position
 * with the bytes it moved (stdio's own refills are internal calls) */
static size_t stream_rec(char kind, FILE *fp, const char *call, long long pos,
			 size_t size, size_t n, size_t got)
{
	int saved = errno;

	access_rec(kind, fileno(fp), call, pos, (long long)size * n, (long long)size * got);
	errno = saved;
	return got;
}

#define STREAM(kind, fp, callname, size, n, expr) do { \
	long long _pos; \
	if (!active || !is_watched(fileno(fp))) \
		return (expr); \
	_pos = ftello(fp); \
	return stream_rec(kind, fp, callname, _pos, size, n, (expr)); \
} while (0)

size_t fread(void *ptr, size_t size, size_t n, FILE *fp)
{
	STREAM('r', fp, "fread", size, n, RESOLVE(fread)(ptr, size, n, fp));
}

size_t __fread_chk(void *ptr, size_t ptrlen, size_t size, size_t n, FILE *fp)
{
	STREAM('r', fp, "__fread_chk", size, n, RESOLVE(__fread_chk)(ptr, ptrlen, size, n, fp));
}

size_t fread_unlocked(void *ptr, size_t size, size_t n, FILE *fp)
{
	STREAM('r', fp, "fread_unlocked", size, n, RESOLVE(fread_unlocked)(ptr, size, n, fp));
}

size_t __fread_unlocked_chk(void *ptr, size_t ptrlen, size_t size, size_t n, FILE *fp)
{
	STREAM('r', fp, "__fread_unlocked_chk", size, n,
	       RESOLVE(__fread_unlocked_chk)(ptr, ptrlen, size, n, fp));
}

size_t fwrite(const void *ptr, size_t size, size_t n, FILE *fp)
{
	STREAM('w', fp, "fwrite", size, n, RESOLVE(fwrite)(ptr, size, n, fp));
}

size_t fwrite_unlocked(const void *ptr, size_t size, size_t n, FILE *fp)
{
	STREAM('w', fp, "fwrite_unlocked", size, n, RESOLVE(fwrite_unlocked)(ptr, size, n, fp));
}

/* ------------------------------------------------------------ mappings */

static void map_rec(int fd, const char *call, long long off, size_t len, int prot, int flags)
{
	struct line l;
	int saved = errno;

	start(&l, 'm', fd, call);
	put_num(&l, off);
	put_num(&l, len);
	put_num(&l, prot);
	put_num(&l, flags);
	emit(&l);
	written++;
	errno = saved;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p = RESOLVE(mmap)(addr, len, prot, flags, fd, off);

	if (p != MAP_FAILED && !(flags & MAP_ANONYMOUS) && is_watched(fd))
		map_rec(fd, "mmap", off, len, prot, flags);
	return p;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	void *p = RESOLVE(mmap64)(addr, len, prot, flags, fd, off);

	if (p != MAP_FAILED && !(flags & MAP_ANONYMOUS) && is_watched(fd))
		map_rec(fd, "mmap64", off, len, prot, flags);
	return p;
}

/* ------------------------------------------------------------ size */

static int truncated(int fd, const char *call, long long len, int r)
{
	struct line l;
	int saved = errno;

	if (is_watched(fd)) {
		start(&l, 't', fd, call);
		put_num(&l, len);
		put_num(&l, result(r));
		emit(&l);
		written++;
	}
	errno = saved;
	return r;
}

int ftruncate(int fd, off_t len)
{
	return truncated(fd, "ftruncate", len, RESOLVE(ftruncate)(fd, len));
}

int ftruncate64(int fd, off64_t len)
{
	return truncated(fd, "ftruncate64", len, RESOLVE(ftruncate64)(fd, len));
}

/* ------------------------------------------------------------ fds */

int close(int fd)
{
	if (active)
		forget(fd);
	return RESOLVE(close)(fd);
}

int fclose(FILE *fp)
{
	if (active && fp)
		forget(fileno(fp));
	return RESOLVE(fclose)(fp);
}

static int duped(int fd, int newfd)
{
	int saved = errno;

	if (newfd >= 0 && active) {
		if (is_watched(fd))
			dup_rec(fd, newfd);
		else
			forget(newfd);
	}
	errno = saved;
	return newfd;
}

int dup(int fd)
{
	return duped(fd, RESOLVE(dup)(fd));
}

int dup2(int fd, int newfd)
{
	return duped(fd, RESOLVE(dup2)(fd, newfd));
}

int dup3(int fd, int newfd, int flags)
{
	return duped(fd, RESOLVE(dup3)(fd, newfd, flags));
}
