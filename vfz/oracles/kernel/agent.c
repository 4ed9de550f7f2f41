/* vfatfuzz kernel-oracle agent: PID 1 of the QEMU guest.
 *
 * Talks to the host over one virtio-serial port (/dev/vportNp1) and serves
 * many requests in one boot. Every frame is little-endian:
 *     request:  u32 len, u8 cmd, payload[len - 1]
 *     reply:    u32 len, u8 status ('o' ok, 'e' error), payload[len - 1]
 * The host may pipeline requests; they are answered in order.
 *
 * Commands
 *   P                      ping; reply "pong"
 *   M {u32 n; n * (str name, str data, str params)}   unload vfat/msdos/
 *                          fat, load the given module images in order
 *                          (init_module with the given parameters)
 *   W {str path; str data} write DATA to a /sys or /proc file (e.g. a module
 *                          parameter); reply "ok" or the errno name
 *   I {u64 size; chunks (u64 off, u32 len, data)...}  the image goes to
 *                          /tmp/img (tmpfs) and onto a fresh loop device
 *   B {u64 size; str dev}  the host wrote the image into the first SIZE
 *                          bytes of block device DEV (a drive whose accesses
 *                          QEMU logs: vfz/oracles/kernel/trace.py; DEV
 *                          "serial=S": the virtio disk of that serial): a
 *                          fresh loop device over that range, direct I/O
 *   O {u32 flags; str fstype; str options; [str source]}   mount the loop
 *                          device on /mnt, or SOURCE when given (a block
 *                          device of the guest: the vvfat oracle's disk)
 *   L {u32 flags; u32 budget_ms}  list the mounted tree (text, see walk_dir);
 *                          flags bit 0: do not read/hash files; a walk that
 *                          spends its budget stops with "E path limit time"
 *   X {u8 op; args}        one op-script operation as a syscall; reply "ok"
 *                          or the errno name (strings: u32 len + bytes,
 *                          numbers: u64): m mkdir, c create, w write,
 *                          r rename, u unlink, d rmdir (first grammar);
 *                          t truncate {path, size}, a chattr {path, attr},
 *                          T touch {path, mtime s, ns, atime s, ns}
 *   U [u32 flags]          unmount (syncs), then drop caches unless flags
 *                          bit 0 is set
 *   G                      image bytes back: u64 size; chunks as in I
 *                          (after B: an error, the host reads its drive)
 *   K                      kernel messages (/dev/kmsg records) since last K
 *   S {str cmd}            run `busybox sh -c CMD` (debugging, benchmarks);
 *                          reply "rc=N\n" + its stdout and stderr
 *   H {u32 ms}             test hook: busy-loop MS milliseconds without
 *                          answering (a hanging request), then reply
 *   Q                      power off
 *
 * Written for vfatfuzz; builds with gcc -static -O2 -Wall -Wextra -Werror
 * together with the core's core/src/sha256.c (build.sh), so that the
 * listing's hashes here and in the core come from one implementation.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <linux/msdos_fs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "sha256.h"

#define MNT "/mnt"
#define IMG "/tmp/img"
#define MAX_DEPTH 64
#define MAX_ENTRIES 50000

/* ---------------------------------------------------------------- util */

static void die(const char *msg)
{
	fprintf(stderr, "vfz-agent: fatal: %s (%s)\n", msg, strerror(errno));
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "EUNKNOWN";
}

/* growable output buffer */
struct buf {
	char *p;
	size_t len, cap;
};

static void buf_grow(struct buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more)
		cap *= 2;
	char *np = realloc(b->p, cap);
	if (!np)
		die("out of memory");
	b->p = np;
	b->cap = cap;
}

static void buf_add(struct buf *b, const void *d, size_t n)
{
	buf_grow(b, n);
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	buf_grow(b, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static void buf_u64(struct buf *b, uint64_t v)
{
	unsigned char t[8];
	for (int i = 0; i < 8; i++)
		t[i] = (unsigned char)(v >> (8 * i));
	buf_add(b, t, 8);
}

static void buf_u32(struct buf *b, uint32_t v)
{
	unsigned char t[4];
	for (int i = 0; i < 4; i++)
		t[i] = (unsigned char)(v >> (8 * i));
	buf_add(b, t, 4);
}

/* escape bytes of a path: printable ASCII except '\\' as is, else \xHH */
static void buf_esc(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c > 0x20 && c < 0x7f && c != '\\') {
			buf_add(b, &s[i], 1);
		} else {
			char e[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
			buf_add(b, e, 4);
		}
	}
}

/* payload reader */
struct rd {
	const unsigned char *p;
	size_t len, pos;
	int bad;
};

static uint64_t rd_u(struct rd *r, int bytes)
{
	uint64_t v = 0;
	if (r->pos + (size_t)bytes > r->len) {
		r->bad = 1;
		return 0;
	}
	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)r->p[r->pos + (size_t)i] << (8 * i);
	r->pos += (size_t)bytes;
	return v;
}

/* a length-prefixed string, returned NUL-terminated in a fresh buffer */
static char *rd_str(struct rd *r, size_t *outlen)
{
	uint64_t n = rd_u(r, 4);
	if (r->bad || r->pos + n > r->len) {
		r->bad = 1;
		return NULL;
	}
	char *s = malloc(n + 1);
	if (!s)
		die("out of memory");
	memcpy(s, r->p + r->pos, n);
	s[n] = 0;
	r->pos += n;
	if (outlen)
		*outlen = n;
	return s;
}

/* ------------------------------------------------------------- channel */

static int chan = -1;

static int read_full(int fd, void *p, size_t n)
{
	unsigned char *q = p;
	while (n) {
		ssize_t r = read(fd, q, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {
			struct pollfd pf = { .fd = fd, .events = POLLIN };
			poll(&pf, 1, 1000);
			continue;
		}
		if (r <= 0)
			return -1;
		q += r;
		n -= (size_t)r;
	}
	return 0;
}

static void write_full(int fd, const void *p, size_t n)
{
	const unsigned char *q = p;
	while (n) {
		ssize_t r = write(fd, q, n);
		if (r < 0 && (errno == EINTR || errno == EAGAIN)) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };
			poll(&pf, 1, 1000);
			continue;
		}
		if (r <= 0)
			return; /* host gone: it will reconnect or restart us */
		q += r;
		n -= (size_t)r;
	}
}

static void reply(char status, const struct buf *b)
{
	unsigned char h[5];
	uint32_t len = (uint32_t)(b ? b->len : 0) + 1;
	for (int i = 0; i < 4; i++)
		h[i] = (unsigned char)(len >> (8 * i));
	h[4] = (unsigned char)status;
	if (b && b->len && b->len < 65536) {
		/* one write for small replies: fewer virtio round trips */
		unsigned char *t = malloc(5 + b->len);
		if (t) {
			memcpy(t, h, 5);
			memcpy(t + 5, b->p, b->len);
			write_full(chan, t, 5 + b->len);
			free(t);
			return;
		}
	}
	write_full(chan, h, 5);
	if (b && b->len)
		write_full(chan, b->p, b->len);
}

static void reply_str(char status, const char *s)
{
	struct buf b = { 0 };
	buf_add(&b, s, strlen(s));
	reply(status, &b);
	free(b.p);
}

/* The host closed the channel (its process died or gave up on us): power
 * off, so that QEMU (-no-reboot) exits instead of idling forever. */
static void host_gone(void)
{
	fprintf(stderr, "vfz-agent: host closed the channel, powering off\n");
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

/* -------------------------------------------------------------- state */

static int mounted;
static char loopdev[64];
static int ondrive; /* the loop device is bound to a drive (B), not to IMG */
static int kmsg_fd = -1;
static int timing; /* report step times in replies (W /vfz/timing 1) */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}


/* Unmount; the loop device stays bound to IMG for the next image (the
 * last close of the block device drops its page cache, so nothing leaks).
 * If the unmount fails, the fs is detached lazily and the loop device is
 * abandoned (autoclear) so that the next image gets a fresh one. */
static void loop_release(struct buf *log)
{
	if (!loopdev[0])
		return;
	int fd = open(loopdev, O_RDONLY);
	if (fd >= 0) {
		if (ioctl(fd, LOOP_CLR_FD, 0) < 0 && errno != ENXIO)
			buf_printf(log, "loop clear: %s\n", ename(errno));
		close(fd);
	}
	loopdev[0] = 0;
	ondrive = 0;
}

static int do_umount(struct buf *log, int drop)
{
	int rc = 0;
	double t0 = now_ms();
	if (mounted) {
		if (umount2(MNT, 0) < 0) {
			buf_printf(log, "umount: %s\n", ename(errno));
			rc = -1;
			if (umount2(MNT, MNT_DETACH) < 0)
				buf_printf(log, "umount -l: %s\n", ename(errno));
			loop_release(log);
		}
		mounted = 0;
	} else {
		return 0;
	}
	double t2 = now_ms();
	int fd = drop ? open("/proc/sys/vm/drop_caches", O_WRONLY) : -1;
	if (fd >= 0) {
		if (write(fd, "3\n", 2) < 0)
			buf_printf(log, "drop_caches: %s\n", ename(errno));
		close(fd);
	}
	if (timing)
		buf_printf(log, "umount %.1f ms, drop_caches %.1f ms\n", t2 - t0, now_ms() - t2);
	return rc;
}

/* ------------------------------------------------------------ modules */

static void cmd_modules(struct rd *r)
{
	struct buf log = { 0 };
	int bad = 0;
	do_umount(&log, 1);
	static const char *const names[] = { "vfat", "msdos", "fat" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (syscall(SYS_delete_module, names[i], O_NONBLOCK) == 0)
			buf_printf(&log, "rmmod %s: ok\n", names[i]);
		else if (errno != ENOENT) {
			buf_printf(&log, "rmmod %s: %s\n", names[i], ename(errno));
			bad = 1;
		}
	}
	uint64_t n = rd_u(r, 4);
	for (uint64_t i = 0; i < n && !r->bad; i++) {
		size_t dlen = 0;
		char *name = rd_str(r, NULL);
		char *data = rd_str(r, &dlen);
		char *params = rd_str(r, NULL);
		if (r->bad) {
			free(name);
			free(data);
			free(params);
			break;
		}
		if (syscall(SYS_init_module, data, (unsigned long)dlen, params) == 0) {
			buf_printf(&log, "insmod %s %s: ok\n", name, params);
		} else {
			buf_printf(&log, "insmod %s %s: %s\n", name, params, ename(errno));
			bad = 1;
		}
		free(name);
		free(data);
		free(params);
	}
	if (r->bad) {
		buf_printf(&log, "bad M payload\n");
		bad = 1;
	}
	reply(bad ? 'e' : 'o', &log);
	free(log.p);
}

/* --------------------------------------------------------------- image */

/* The I payload is streamed from the channel into IMG (no copy of the
 * whole image in memory): u64 size, then runs (u64 off, u32 len, data). */
struct stream {
	size_t left; /* payload bytes not read yet */
	int dead;    /* channel failed */
};

static int st_read(struct stream *s, void *p, size_t n)
{
	if (n > s->left || s->dead)
		return -1;
	if (read_full(chan, p, n) < 0) {
		s->dead = 1;
		return -1;
	}
	s->left -= n;
	return 0;
}

static void st_drain(struct stream *s)
{
	static unsigned char junk[1 << 16];
	while (s->left && !s->dead) {
		size_t n = s->left < sizeof junk ? s->left : sizeof junk;
		if (st_read(s, junk, n) < 0)
			break;
	}
}

static uint64_t le(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static int image_file(struct stream *s, struct buf *log, int *outfd)
{
	static unsigned char io[1 << 20];
	unsigned char h[12];
	if (st_read(s, h, 8) < 0) {
		buf_printf(log, "bad image payload\n");
		return -1;
	}
	uint64_t size = le(h, 8);
	/* same inode every time (the loop device stays bound to it); emptied
	 * first so that no byte of the previous image survives */
	int fd = open(IMG, O_RDWR | O_CREAT, 0600);
	*outfd = fd;
	if (fd < 0 || ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)size) < 0) {
		buf_printf(log, "image file: %s\n", ename(errno));
		return -1;
	}
	while (s->left) {
		if (st_read(s, h, 12) < 0) {
			buf_printf(log, "bad image chunk header\n");
			return -1;
		}
		uint64_t off = le(h, 8), len = le(h + 8, 4);
		if (len > s->left || off + len > size) {
			buf_printf(log, "bad image chunk\n");
			return -1;
		}
		while (len) {
			size_t n = len < sizeof io ? (size_t)len : sizeof io;
			if (st_read(s, io, n) < 0)
				return -1;
			if (pwrite(fd, io, n, (off_t)off) != (ssize_t)n) {
				buf_printf(log, "image write: %s\n", ename(errno));
				return -1;
			}
			off += n;
			len -= n;
		}
	}
	buf_printf(log, "%llu bytes\n", (unsigned long long)size);
	return 0;
}

static void cmd_image(size_t plen)
{
	struct buf log = { 0 };
	struct stream s = { .left = plen };
	double t0 = now_ms();
	int fd = -1;
	do_umount(&log, 1);
	if (ondrive) /* IMG gets a loop device of its own again */
		loop_release(&log);
	int rc = image_file(&s, &log, &fd);
	st_drain(&s);
	if (s.dead) /* host gone mid-frame: nobody to answer */
		host_gone();
	if (rc < 0)
		goto fail;
	double t1 = now_ms();
	if (loopdev[0]) {
		int lfd = open(loopdev, O_RDWR);
		if (lfd < 0 || ioctl(lfd, LOOP_SET_CAPACITY, 0) < 0) {
			buf_printf(&log, "%s: set capacity: %s\n", loopdev, ename(errno));
			if (lfd >= 0)
				close(lfd);
			loop_release(&log);
		} else {
			close(lfd);
		}
	}
	if (!loopdev[0]) {
		int ctl = open("/dev/loop-control", O_RDWR);
		if (ctl < 0) {
			buf_printf(&log, "loop-control: %s\n", ename(errno));
			goto fail;
		}
		int nr = ioctl(ctl, LOOP_CTL_GET_FREE);
		close(ctl);
		if (nr < 0) {
			buf_printf(&log, "loop get free: %s\n", ename(errno));
			goto fail;
		}
		snprintf(loopdev, sizeof loopdev, "/dev/loop%d", nr);
		int lfd = open(loopdev, O_RDWR);
		if (lfd < 0) {
			buf_printf(&log, "%s: %s\n", loopdev, ename(errno));
			loopdev[0] = 0;
			goto fail;
		}
		struct loop_config cfg;
		memset(&cfg, 0, sizeof cfg);
		cfg.fd = (unsigned)fd;
		cfg.block_size = 512;
		cfg.info.lo_flags = 0; /* no autoclear: closing lfd would detach it */
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) < 0) {
			buf_printf(&log, "LOOP_CONFIGURE: %s\n", ename(errno));
			close(lfd);
			loopdev[0] = 0;
			goto fail;
		}
		close(lfd);
	}
	close(fd);
	buf_printf(&log, "%s\n", loopdev);
	if (timing)
		buf_printf(&log, "write %.1f ms, loop %.1f ms\n", t1 - t0, now_ms() - t1);
	reply('o', &log);
	free(log.p);
	return;
fail:
	if (fd >= 0)
		close(fd);
	reply('e', &log);
	free(log.p);
}

/* B: the image is on a drive. A fresh loop device over its first SIZE
 * bytes (lo_sizelimit: the same capacity as a loop device over IMG), with
 * direct I/O: every request of the filesystem on the loop device is one
 * request on the drive at the same offset, which QEMU's block layer logs,
 * and the drive's own page cache is never used (it is dropped first all
 * the same: a buffered loop would read stale blocks of the last image).
 * The reply says "dio" or "buffered" (the host treats buffered as an
 * error: the drive's readahead would stand for the filesystem's reads). */
/* "/dev/vdX" of the disk whose /sys/block/vdX/serial is SERIAL, or "" */
static void disk_of_serial(const char *serial, char *out, size_t n)
{
	DIR *d = opendir("/sys/block");
	struct dirent *de;
	out[0] = 0;
	while (d && (de = readdir(d))) {
		char path[300], got[128] = "";
		if (de->d_name[0] == '.' || strlen(de->d_name) > 200)
			continue;
		snprintf(path, sizeof path, "/sys/block/%s/serial", de->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t k = read(fd, got, sizeof got - 1);
		close(fd);
		got[k > 0 ? k : 0] = 0;
		got[strcspn(got, "\n")] = 0;
		if (!strcmp(got, serial)) {
			snprintf(out, n, "/dev/%s", de->d_name);
			break;
		}
	}
	if (d)
		closedir(d);
}

static void cmd_bind(struct rd *r)
{
	struct buf log = { 0 };
	uint64_t size = rd_u(r, 8);
	char *dev = rd_str(r, NULL);
	int dfd = -1, lfd = -1;
	do_umount(&log, 1);
	loop_release(&log);
	if (r->bad) {
		buf_printf(&log, "bad B payload\n");
		goto fail;
	}
	if (!strncmp(dev, "serial=", 7)) {
		char path[256];
		disk_of_serial(dev + 7, path, sizeof path);
		if (!path[0]) {
			buf_printf(&log, "no disk of %s\n", dev);
			goto fail;
		}
		free(dev);
		dev = strdup(path);
	}
	dfd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (dfd < 0 || ioctl(dfd, BLKFLSBUF, 0) < 0) {
		buf_printf(&log, "%s: %s\n", dev, ename(errno));
		goto fail;
	}
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	int nr = ctl < 0 ? -1 : ioctl(ctl, LOOP_CTL_GET_FREE);
	if (ctl >= 0)
		close(ctl);
	if (nr < 0) {
		buf_printf(&log, "loop get free: %s\n", ename(errno));
		goto fail;
	}
	snprintf(loopdev, sizeof loopdev, "/dev/loop%d", nr);
	lfd = open(loopdev, O_RDWR | O_CLOEXEC);
	struct loop_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.fd = (unsigned)dfd;
	cfg.block_size = 512;
	cfg.info.lo_sizelimit = size;
	cfg.info.lo_flags = LO_FLAGS_DIRECT_IO;
	if (lfd < 0 || ioctl(lfd, LOOP_CONFIGURE, &cfg) < 0) {
		buf_printf(&log, "%s: LOOP_CONFIGURE: %s\n", loopdev, ename(errno));
		loopdev[0] = 0;
		goto fail;
	}
	ondrive = 1;
	struct loop_info64 info;
	int dio = ioctl(lfd, LOOP_GET_STATUS64, &info) == 0 &&
		  (info.lo_flags & LO_FLAGS_DIRECT_IO);
	buf_printf(&log, "%s on %s, %llu bytes, %s\n", loopdev, dev, (unsigned long long)size,
		   dio ? "dio" : "buffered");
	close(lfd);
	close(dfd);
	free(dev);
	reply('o', &log);
	free(log.p);
	return;
fail:
	if (lfd >= 0)
		close(lfd);
	if (dfd >= 0)
		close(dfd);
	free(dev);
	reply('e', &log);
	free(log.p);
}

static int all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* G: the image back, streamed: u64 size, then the non-zero 4 KiB runs
 * (u64 off, u32 len, data); a first pass finds the runs and the length. */
struct run {
	uint64_t off, len;
};

static void cmd_get(void)
{
	enum { BS = 4096, MAXRUN = 1 << 30 };
	static unsigned char blk[1 << 16];
	struct stat st;
	if (ondrive) {
		reply_str('e', "image on a drive: the host reads it there");
		return;
	}
	int fd = open(IMG, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		reply_str('e', ename(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	struct run *runs = NULL;
	size_t nruns = 0, cap = 0;
	uint64_t total = 8;
	/* Only the file's data extents are read: the image was written as
	 * chunks into an emptied tmpfs file, so its holes are the blocks that
	 * neither the host sent nor the kernel wrote, and they read as zeros.
	 * Scanning a 34 MB FAT32 image byte by byte under TCG cost ~300 ms. */
	off_t hole = 0;
	for (off_t off = 0; off < st.st_size;) {
		if (off >= hole) {
			off_t d = lseek(fd, off, SEEK_DATA);
			if (d < 0 && errno == ENXIO)
				break;          /* only a hole is left */
			if (d < 0) {            /* no SEEK_DATA: read all of it */
				hole = st.st_size;
				continue;
			}
			hole = lseek(fd, d, SEEK_HOLE);
			if (hole < 0 || hole > st.st_size)
				hole = st.st_size;
			off = d & ~(off_t)(BS - 1);
		}
		size_t want = sizeof blk;
		if ((off_t)want > hole - off)
			want = (size_t)(hole - off);
		ssize_t n = pread(fd, blk, want, off);
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i += BS) {
			size_t m = (size_t)(n - i) < BS ? (size_t)(n - i) : BS;
			uint64_t at = (uint64_t)off + (uint64_t)i;
			if (all_zero(blk + i, m))
				continue;
			if (nruns && runs[nruns - 1].off + runs[nruns - 1].len == at &&
			    runs[nruns - 1].len < MAXRUN) {
				runs[nruns - 1].len += m;
			} else {
				if (nruns == cap) {
					cap = cap ? 2 * cap : 64;
					runs = realloc(runs, cap * sizeof *runs);
					if (!runs)
						die("out of memory");
				}
				runs[nruns++] = (struct run){ at, m };
				total += 12;
			}
			total += m;
		}
		off += n;
	}
	unsigned char h[12];
	struct buf hb = { 0 };
	buf_u32(&hb, (uint32_t)(total + 1));
	buf_add(&hb, "o", 1);
	buf_u64(&hb, (uint64_t)st.st_size);
	write_full(chan, hb.p, hb.len);
	free(hb.p);
	for (size_t k = 0; k < nruns; k++) {
		for (int i = 0; i < 8; i++)
			h[i] = (unsigned char)(runs[k].off >> (8 * i));
		for (int i = 0; i < 4; i++)
			h[8 + i] = (unsigned char)(runs[k].len >> (8 * i));
		write_full(chan, h, 12);
		uint64_t done = 0;
		while (done < runs[k].len) {
			size_t want = sizeof blk;
			if (want > runs[k].len - done)
				want = (size_t)(runs[k].len - done);
			ssize_t n = pread(fd, blk, want, (off_t)(runs[k].off + done));
			if (n <= 0) { /* cannot happen on tmpfs; keep the frame length */
				memset(blk, 0, want);
				n = (ssize_t)want;
			}
			write_full(chan, blk, (size_t)n);
			done += (uint64_t)n;
		}
	}
	free(runs);
	close(fd);
}

/* --------------------------------------------------------------- mount */

static void cmd_mount(struct rd *r)
{
	uint32_t flags = (uint32_t)rd_u(r, 4);
	char *fstype = rd_str(r, NULL);
	char *opts = rd_str(r, NULL);
	/* optional: another block device than the image's loop device */
	char *src = !r->bad && r->pos < r->len ? rd_str(r, NULL) : NULL;
	struct buf log = { 0 };
	char st = 'o';
	if (r->bad) {
		buf_printf(&log, "bad O payload");
		st = 'e';
	} else if (!src && !loopdev[0]) {
		buf_printf(&log, "no image");
		st = 'e';
	} else if (mounted) {
		buf_printf(&log, "already mounted");
		st = 'e';
	} else if (mount(src ? src : loopdev, MNT, fstype, flags, opts) < 0) {
		buf_printf(&log, "%s", ename(errno));
		st = 'e';
	} else {
		mounted = 1;
		buf_printf(&log, "ok");
	}
	reply(st, &log);
	free(log.p);
	free(fstype);
	free(opts);
	free(src);
}

static void cmd_umount(struct rd *r)
{
	struct buf log = { 0 };
	uint32_t flags = r->len >= 4 ? (uint32_t)rd_u(r, 4) : 0;
	int rc = do_umount(&log, !(flags & 1));
	if (!log.len)
		buf_printf(&log, "ok");
	reply(rc ? 'e' : 'o', &log);
	free(log.p);
}

/* ---------------------------------------------------------------- list */

/* One line per entry, tab-separated:
 *   T  path  d_type  stat_type  size  sha256  stat_err  open_err  read_err
 *      attr  mtime  atime  btime
 * d_type/stat_type: f d l o (other) ? (unknown/failed); '-' = not applicable.
 * attr: FAT_IOCTL_GET_ATTRIBUTES on the entry's descriptor, two hex digits
 * (an errno name when the ioctl failed, '-' when it was not opened);
 * times: statx's "sec.nsec" (btime: FAT's creation time; '-' when statx
 * did not give it).
 * Problems with a directory as a whole: "E  path  what  errno".
 * The walk stops at MAX_DEPTH levels and MAX_ENTRIES entries ("E ... limit"). */
struct walk {
	struct buf *out;
	long entries;
	int hash;
	unsigned char *io;
	double deadline; /* now_ms() bound for the whole walk, 0 = none */
	int late;
};

static int walk_late(struct walk *w)
{
	if (!w->late && w->deadline > 0 && now_ms() > w->deadline)
		w->late = 1;
	return w->late;
}

static char tchar(unsigned char dt)
{
	switch (dt) {
	case DT_REG: return 'f';
	case DT_DIR: return 'd';
	case DT_LNK: return 'l';
	case DT_UNKNOWN: return '?';
	default: return 'o';
	}
}

static char stchar(mode_t m)
{
	if (S_ISREG(m)) return 'f';
	if (S_ISDIR(m)) return 'd';
	if (S_ISLNK(m)) return 'l';
	return 'o';
}

/* the entry's FAT attributes as the kernel shows them (fat_make_attrs:
 * the bits it keeps, ATTR_DIR and ATTR_RO from the mode) */
static void get_attr(int fd, char *out, size_t n)
{
	uint32_t a = 0;
	if (ioctl(fd, FAT_IOCTL_GET_ATTRIBUTES, &a) < 0)
		snprintf(out, n, "%s", ename(errno));
	else
		snprintf(out, n, "%02x", a);
}

static void put_time(struct buf *b, const struct statx_timestamp *t)
{
	buf_printf(b, "\t%lld.%09u", (long long)t->tv_sec, t->tv_nsec);
}

/* "\tmtime\tatime\tbtime\n" of a statx answer, '-' for what it lacks */
static void put_times(struct buf *b, const struct statx *st)
{
	if (!st) {
		buf_printf(b, "\t-\t-\t-\n");
		return;
	}
	put_time(b, &st->stx_mtime);
	put_time(b, &st->stx_atime);
	if (st->stx_mask & STATX_BTIME)
		put_time(b, &st->stx_btime);
	else
		buf_printf(b, "\t-");
	buf_printf(b, "\n");
}

static void walk_dir(struct walk *w, int dfd, char *path, size_t plen, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		buf_add(w->out, "E\t", 2);
		buf_esc(w->out, path, plen);
		buf_printf(w->out, "\topendir\t%s\n", ename(errno));
		close(dfd);
		return;
	}
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (!de) {
			if (errno) {
				buf_add(w->out, "E\t", 2);
				buf_esc(w->out, path, plen);
				buf_printf(w->out, "\treaddir\t%s\n", ename(errno));
			}
			break;
		}
		const char *nm = de->d_name;
		if (!strcmp(nm, ".") || !strcmp(nm, ".."))
			continue;
		size_t nl = strlen(nm);
		if (++w->entries > MAX_ENTRIES) {
			buf_add(w->out, "E\t", 2);
			buf_esc(w->out, path, plen);
			buf_printf(w->out, "\tlimit\tentries\n");
			break;
		}
		if (walk_late(w)) {
			buf_add(w->out, "E\t", 2);
			buf_esc(w->out, path, plen);
			buf_printf(w->out, "\tlimit\ttime\n");
			break;
		}
		if (plen + 1 + nl >= PATH_MAX) {
			buf_add(w->out, "E\t", 2);
			buf_esc(w->out, path, plen);
			buf_printf(w->out, "\tlimit\tpath\n");
			continue;
		}
		path[plen] = '/';
		memcpy(path + plen + 1, nm, nl + 1);
		size_t cl = plen + 1 + nl;

		struct statx st;
		int serr = 0;
		if (statx(dirfd(d), nm, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME, &st) < 0)
			serr = errno;
		char stype = serr ? '?' : stchar(st.stx_mode);
		char dtype = tchar(de->d_type);
		char kind = serr ? dtype : stype;
		char sha[65] = "-";
		char sizebuf[32] = "-";
		const char *oerr = "-", *rerr = "-";
		if (!serr)
			snprintf(sizebuf, sizeof sizebuf, "%lld", (long long)st.stx_size);
		int sub = -1;
		char attr[24] = "-";
		if (kind == 'f') {
			int fd = openat(dirfd(d), nm, O_RDONLY | O_NOFOLLOW);
			if (fd < 0) {
				oerr = ename(errno);
			} else {
				oerr = "ok";
				get_attr(fd, attr, sizeof attr);
				if (w->hash) {
					struct sha256 s;
					uint8_t digest[32];
					sha256_init(&s);
					for (;;) {
						ssize_t n = read(fd, w->io, 1 << 16);
						if (n < 0) {
							rerr = ename(errno);
							break;
						}
						if (n == 0)
							break;
						sha256_update(&s, w->io, (size_t)n);
						if (walk_late(w)) {
							rerr = "ETIME"; /* walk budget spent */
							break;
						}
					}
					uint64_t got = s.len;
					sha256_final(&s, digest);
					sha256_hex(digest, sha);
					if (!serr && (long long)got != (long long)st.stx_size && rerr[0] == '-')
						rerr = "SHORT";
					if (serr)
						snprintf(sizebuf, sizeof sizebuf, "%llu", (unsigned long long)got);
				}
				close(fd);
			}
		} else if (kind == 'd') {
			sub = openat(dirfd(d), nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
			oerr = sub < 0 ? ename(errno) : "ok";
			if (sub >= 0)
				get_attr(sub, attr, sizeof attr);
		}
		buf_add(w->out, "T\t", 2);
		buf_esc(w->out, path, cl);
		buf_printf(w->out, "\t%c\t%c\t%s\t%s\t%s\t%s\t%s\t%s", dtype, stype, sizebuf, sha,
			   serr ? ename(serr) : "-", oerr, rerr, attr);
		put_times(w->out, serr ? NULL : &st);
		if (sub >= 0) {
			if (depth + 1 >= MAX_DEPTH) {
				buf_add(w->out, "E\t", 2);
				buf_esc(w->out, path, cl);
				buf_printf(w->out, "\tlimit\tdepth\n");
				close(sub);
			} else {
				walk_dir(w, sub, path, cl, depth + 1);
			}
		}
		path[plen] = 0;
	}
	closedir(d);
}

static void cmd_list(struct rd *r)
{
	uint32_t flags = (uint32_t)rd_u(r, 4);
	if (!mounted) {
		reply_str('e', "not mounted");
		return;
	}
	struct buf out = { 0 };
	struct walk w = { .out = &out, .hash = !(flags & 1) };
	uint32_t budget = (uint32_t)rd_u(r, 4); /* optional: ms for the walk */
	if (!r->bad && budget)
		w.deadline = now_ms() + budget;
	static unsigned char io[1 << 16];
	static char path[PATH_MAX + 8];
	w.io = io;
	path[0] = 0;
	int fd = open(MNT, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		buf_printf(&out, "E\t/\topen\t%s\n", ename(errno));
	} else {
		walk_dir(&w, fd, path, 0, 0);
	}
	reply('o', &out);
	free(out.p);
}

/* ----------------------------------------------------------------- ops */

/* Ops run with the volume as the root directory (chroot), so that an
 * op-script path means what it says: "/" is the root of the volume (a
 * LAST_ROOT for the VFS: create EEXIST, rmdir EBUSY), and ".." at the
 * root stays there. Prefixing "/mnt" instead made "/" the component
 * "mnt/" (create EISDIR) and let "/.." escape into the agent's own root. */
static int enter_volume(int *rootfd)
{
	*rootfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*rootfd < 0)
		return errno;
	if (chdir(MNT) < 0 || chroot(".") < 0) {
		int e = errno;
		if (fchdir(*rootfd) < 0)
			die("cannot return to /");
		close(*rootfd);
		return e;
	}
	return 0;
}

static void leave_volume(int rootfd)
{
	if (fchdir(rootfd) < 0 || chroot(".") < 0 || chdir("/") < 0)
		die("cannot leave the volume's chroot");
	close(rootfd);
}

/* An op's data in one pwrite, as the op-script's one write() means it:
 * Linux writes page by page and, when the volume runs out part-way, keeps
 * the largest page boundary the clusters reach and answers short; the
 * rest is asked once more for its errno (ENOSPC). Byte i is
 * (seed + 31 i) mod 256. Writing in chunks instead would keep each
 * chunk's end, which need not be a page boundary. */
static int put_content(int fd, uint64_t off, uint64_t size, uint64_t seed)
{
	unsigned char *buf;
	uint64_t done = 0;
	int e = 0;

	if (size == 0)
		return 0;
	if (size > (uint64_t)SSIZE_MAX)
		return EFBIG;
	buf = malloc((size_t)size);
	if (!buf)
		return ENOMEM;
	for (uint64_t i = 0; i < size; i++)
		buf[i] = (unsigned char)((seed % 256 + 31 * (i % 256)) % 256);
	while (done < size) {
		ssize_t w = pwrite(fd, buf + done, (size_t)(size - done), (off_t)(off + done));
		if (w < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			break;
		}
		if (w == 0) {
			e = EIO;
			break;
		}
		done += (uint64_t)w;
	}
	free(buf);
	return e;
}

/* chattr: FAT_IOCTL_SET_ATTRIBUTES on a read-only descriptor, as the
 * kernel's own fat attribute tools do (the ioctl takes the mount's write
 * access itself); open's errors are the op's (ENOENT, ENOTDIR) */
static int op_chattr(const char *path, uint32_t attr)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int err = ioctl(fd, FAT_IOCTL_SET_ATTRIBUTES, &attr) < 0 ? errno : 0;
	close(fd);
	return err;
}

/* touch: utimensat with both times (the kernel clamps them to the
 * volume's range and rounds them: fat_truncate_time) */
static int op_touch(const char *path, uint64_t msec, uint64_t mns, uint64_t asec, uint64_t ans)
{
	struct timespec ts[2] = {
		{ .tv_sec = (time_t)asec, .tv_nsec = (long)ans },
		{ .tv_sec = (time_t)msec, .tv_nsec = (long)mns },
	};
	return utimensat(AT_FDCWD, path, ts, 0) < 0 ? errno : 0;
}

static void cmd_op(struct rd *r)
{
	int op = (int)rd_u(r, 1);
	char *a = NULL, *b = NULL;
	uint64_t n1 = 0, n2 = 0, n3 = 0;
	int err = 0;
	if (!mounted) {
		reply_str('e', "not mounted");
		return;
	}
	int rootfd = -1;
	a = rd_str(r, NULL);
	if (op == 'r')
		b = rd_str(r, NULL);
	if (!r->bad) {
		err = enter_volume(&rootfd);
		if (err) {
			free(a);
			free(b);
			reply_str('o', ename(err));
			return;
		}
	}
	switch (op) {
	case 'm':
		if (!r->bad && mkdir(a, 0755) < 0)
			err = errno;
		break;
	case 'c':
		n1 = rd_u(r, 8);
		n2 = rd_u(r, 8);
		if (!r->bad) {
			int fd = open(a, O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (fd < 0) {
				err = errno;
			} else {
				err = put_content(fd, 0, n1, n2);
				if (close(fd) < 0 && !err)
					err = errno;
			}
		}
		break;
	case 'w':
		n1 = rd_u(r, 8);
		n2 = rd_u(r, 8);
		n3 = rd_u(r, 8);
		if (!r->bad) {
			int fd = open(a, O_WRONLY);
			if (fd < 0) {
				err = errno;
			} else {
				err = put_content(fd, n1, n2, n3);
				if (close(fd) < 0 && !err)
					err = errno;
			}
		}
		break;
	case 'r':
		if (!r->bad && rename(a, b) < 0)
			err = errno;
		break;
	case 'u':
		if (!r->bad && unlink(a) < 0)
			err = errno;
		break;
	case 'd':
		if (!r->bad && rmdir(a) < 0)
			err = errno;
		break;
	case 't':
		n1 = rd_u(r, 8);
		if (!r->bad && truncate(a, (off_t)n1) < 0)
			err = errno;
		break;
	case 'a':
		n1 = rd_u(r, 4);
		if (!r->bad)
			err = op_chattr(a, (uint32_t)n1);
		break;
	case 'T': {
		uint64_t ms = rd_u(r, 8), mn = rd_u(r, 8), as = rd_u(r, 8), an = rd_u(r, 8);
		if (!r->bad)
			err = op_touch(a, ms, mn, as, an);
		break;
	}
	default:
		r->bad = 1;
	}
	if (rootfd >= 0)
		leave_volume(rootfd);
	free(a);
	free(b);
	if (r->bad)
		reply_str('e', "bad X payload");
	else
		reply_str('o', err ? ename(err) : "ok");
}

static void cmd_writefile(struct rd *r)
{
	size_t dlen = 0;
	char *path = rd_str(r, NULL);
	char *data = rd_str(r, &dlen);
	if (r->bad) {
		reply_str('e', "bad W payload");
	} else if (!strcmp(path, "/vfz/timing")) {
		timing = data[0] == '1';
		reply_str('o', "ok");
	} else {
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		int err = 0;
		if (fd < 0)
			err = errno;
		else {
			errno = 0;
			if (write(fd, data, dlen) != (ssize_t)dlen)
				err = errno ? errno : EIO;
			close(fd);
		}
		reply_str(err ? 'e' : 'o', err ? ename(err) : "ok");
	}
	free(path);
	free(data);
}

static void cmd_shell(struct rd *r)
{
	char *cmd = rd_str(r, NULL);
	if (r->bad) {
		reply_str('e', "bad S payload");
		free(cmd);
		return;
	}
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		reply_str('e', ename(errno));
		free(cmd);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		execl("/bin/busybox", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	struct buf out = { 0 };
	char tmp[4096];
	for (;;) {
		ssize_t n = read(pfd[0], tmp, sizeof tmp);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		buf_add(&out, tmp, (size_t)n);
	}
	close(pfd[0]);
	int status = 0;
	if (pid > 0)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	struct buf rep = { 0 };
	buf_printf(&rep, "rc=%d\n", pid < 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	if (out.len)
		buf_add(&rep, out.p, out.len);
	reply('o', &rep);
	free(rep.p);
	free(out.p);
	free(cmd);
}

/* ---------------------------------------------------------------- kmsg */

static void cmd_kmsg(void)
{
	struct buf out = { 0 };
	static char rec[8192];
	if (kmsg_fd >= 0) {
		for (;;) {
			ssize_t n = read(kmsg_fd, rec, sizeof rec - 1);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EPIPE) /* overwritten records: go on */
					continue;
				break; /* EAGAIN: nothing more */
			}
			if (n == 0)
				break;
			buf_add(&out, rec, (size_t)n);
			if (rec[n - 1] != '\n')
				buf_add(&out, "\n", 1);
		}
	}
	reply('o', &out);
	free(out.p);
}

/* ---------------------------------------------------------------- boot */

static void load_boot_modules(void)
{
	FILE *f = fopen("/modules.list", "r");
	char line[512];
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (!line[0])
			continue;
		int fd = open(line, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "vfz-agent: %s: %s\n", line, strerror(errno));
			continue;
		}
		if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)
			fprintf(stderr, "vfz-agent: load %s: %s\n", line, strerror(errno));
		close(fd);
	}
	fclose(f);
}

static int open_port(void)
{
	/* the port node appears once the host side announces it */
	for (int tries = 0; tries < 2000; tries++) {
		DIR *d = opendir("/dev");
		if (d) {
			struct dirent *de;
			char name[300] = "";
			while ((de = readdir(d)))
				if (!strncmp(de->d_name, "vport", 5) && strchr(de->d_name, 'p') &&
				    strlen(de->d_name) < 200) {
					snprintf(name, sizeof name, "/dev/%s", de->d_name);
					break;
				}
			closedir(d);
			if (name[0]) {
				int fd = open(name, O_RDWR | O_CLOEXEC);
				if (fd >= 0)
					return fd;
			}
		}
		usleep(5000);
	}
	return -1;
}

int main(void)
{
	mkdir("/proc", 0755);
	mkdir("/sys", 0755);
	mkdir("/dev", 0755);
	mkdir("/tmp", 01777);
	mkdir(MNT, 0755);
	if (mount("proc", "/proc", "proc", 0, NULL) < 0)
		die("mount /proc");
	if (mount("sysfs", "/sys", "sysfs", 0, NULL) < 0)
		die("mount /sys");
	if (mount("devtmpfs", "/dev", "devtmpfs", 0, NULL) < 0 && errno != EBUSY)
		die("mount /dev");
	/* the image lives here: let it use most of the guest's memory */
	if (mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777,size=90%") < 0)
		die("mount /tmp");
	load_boot_modules();
	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg_fd >= 0)
		lseek(kmsg_fd, 0, SEEK_END);
	chan = open_port();
	if (chan < 0)
		die("no virtio-serial port");
	fprintf(stderr, "vfz-agent: ready\n");
	reply_str('r', "ready");

	for (;;) {
		unsigned char h[5];
		if (read_full(chan, h, 5) < 0)
			host_gone();
		uint32_t len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
			       (uint32_t)h[3] << 24;
		if (len < 1) {
			reply_str('e', "bad frame");
			continue;
		}
		size_t plen = len - 1;
		if (h[4] == 'I') { /* streamed straight into the image file */
			cmd_image(plen);
			continue;
		}
		unsigned char *p = malloc(plen ? plen : 1);
		if (!p)
			die("out of memory");
		if (read_full(chan, p, plen) < 0)
			host_gone();
		struct rd r = { .p = p, .len = plen };
		switch (h[4]) {
		case 'P': reply_str('o', "pong"); break;
		case 'M': cmd_modules(&r); break;
		case 'B': cmd_bind(&r); break;
		case 'O': cmd_mount(&r); break;
		case 'L': cmd_list(&r); break;
		case 'X': cmd_op(&r); break;
		case 'U': cmd_umount(&r); break;
		case 'G': cmd_get(); break;
		case 'K': cmd_kmsg(); break;
		case 'W': cmd_writefile(&r); break;
		case 'S': cmd_shell(&r); break;
		case 'H': {
			struct timespec t0, t1;
			uint64_t ms = rd_u(&r, 4);
			clock_gettime(CLOCK_MONOTONIC, &t0);
			do
				clock_gettime(CLOCK_MONOTONIC, &t1);
			while ((uint64_t)(t1.tv_sec - t0.tv_sec) * 1000 +
				       (uint64_t)((t1.tv_nsec - t0.tv_nsec) / 1000000) < ms);
			reply_str('o', "awake");
			break;
		}
		case 'Q':
			reply_str('o', "bye");
			sync();
			reboot(RB_POWER_OFF);
			break;
		default: reply_str('e', "unknown command"); break;
		}
		free(p);
	}
}
