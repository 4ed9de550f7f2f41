// ChaN FatFs R0.15 (npm js-fatfs 0.2.1, WebAssembly) serving vfatfuzz
// requests: one JSON object a line on stdin, one answer a line on stdout.
//
//   {"id": N, "op": "ping"}                       -> {"id": N, "ok": true}
//   {"id": N, "op": "list", "image": PATH}        -> {"id": N, "entries": [...],
//                                                     "complaints": [...]} | {"id": N, "error": "..."}
//   {"id": N, "op": "trap", "image": PATH} / {"id": N, "op": "hang"}: for the
//                                                 tests of the restart path
//   {"id": N, "op": "casefold", "pairs": [[a, b], ...]} -> {"id": N, "same": [[a, b], ...]}
//   {"id": N, "op": "apply", "image": PATH, "ops": [[kind, arg...], ...]}
//                                                 -> {"id": N, "results": ["ok"|"EEXIST"|...],
//                                                     "fr": [FR_ name or null, ...]} | {"id": N, "error": "..."}
//   {"id": N, "op": "mkfs", "image": PATH, "size": BYTES, "ss": BYTES, "fmt": "fat"|"fat32",
//    "n_fat": N, "n_root": N, "au_size": BYTES, "align": SECTORS}
//                                                 -> {"id": N, "ok": true} | {"id": N, "error": "f_mkfs: FR_..."}
//
// FatFs reads the image file sector by sector (the diskio callbacks) and
// its writes are kept in memory; "apply" writes them back atomically (a
// copy of the image, the sectors written, rename) after the last op. A JavaScript exception or a WebAssembly trap is answered
// with {"id": N, "error": "trap: ...", "trap": true} and the process exits
// (status 3): the Python side starts a fresh one for the next image. A hang
// is the Python side's to time out. stdout carries answers only.
//
// The op semantics (POSIX, as Linux answers; vfz/oracles/fatfs.py documents
// the whole contract and the FRESULT -> errno map) are split in two:
//   * what Linux decides in the VFS is decided here, with FatFs's own f_stat
//     as the lookup: the path walk with "." and ".." (this FatFs build has
//     FF_FS_RPATH 0 and refuses dot names), trailing slashes, unlink of a
//     directory / rmdir of a file (FatFs has one f_unlink for both), EISDIR
//     / ENOTDIR / EINVAL (into its own subtree) / ENOTEMPTY (onto an
//     ancestor) of rename, the root, PATH_MAX;
//   * what Linux decides in the file system, FatFs decides: names it
//     refuses or strips, case folding, clashes, space. A rename onto an
//     existing entry is f_rename (which answers FR_EXIST: FatFs never
//     replaces), then f_unlink of the target and f_rename again, as a
//     POSIX layer over FatFs does it.
'use strict';

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const readline = require('readline');

// keep stdout for answers: emscripten and anything else that prints goes to stderr
console.log = console.error;
console.info = console.error;
console.warn = console.error;

const FRNAMES = ['FR_OK', 'FR_DISK_ERR', 'FR_INT_ERR', 'FR_NOT_READY', 'FR_NO_FILE', 'FR_NO_PATH',
	'FR_INVALID_NAME', 'FR_DENIED', 'FR_EXIST', 'FR_INVALID_OBJECT', 'FR_WRITE_PROTECTED',
	'FR_INVALID_DRIVE', 'FR_NOT_ENABLED', 'FR_NO_FILESYSTEM', 'FR_MKFS_ABORTED', 'FR_TIMEOUT',
	'FR_LOCKED', 'FR_NOT_ENOUGH_CORE', 'FR_TOO_MANY_OPEN_FILES', 'FR_INVALID_PARAMETER'];
const PATH_MAX = 4096;
const CHUNK = 1 << 16;
const MAX_DEPTH = 256;          // deeper nesting is a directory loop
const MAX_IO = 20000;           // sector records per answer inside the volume (the rest counted)

let F = null;                   // the js-fatfs module (constants)
let ff = null;                  // the FatFs instance
let disk = null;                // the memory disk
let mem = {};                   // malloc'd FATFS, DIR, FILINFO, FIL, buffers

class Trap extends Error {}

// The disk FatFs sees: an image file read sector by sector straight into
// the module's memory, or a RAM buffer (casefold, layout check). Writes go
// to an overlay of sectors (the file is never touched while FatFs runs);
// commit() copies the file, applies the overlay to the copy and renames it
// over the image (atomic).
// Every disk_read and disk_write is recorded (the I/O-bounds oracle,
// vfz/iobounds.py): [kind 'r'|'w', first sector, count, op index, 1 done |
// 0 refused], consecutive ones of one kind and op merged; an access past
// the image is recorded too (then answered RES_ERROR, as FatFs would get
// from a device). The op is what the server was doing: mount, each FatFs call
// of the list walk with its path (f_opendir, f_readdir, f_stat, f_open/f_read),
// each op of apply, unmount; a label equal to the one before it is not repeated. Past MAX_IO records only those
// that end past the declared volume are kept; the others are counted.
class Disk {
	constructor() {
		this.close();
	}
	close() {
		if (this.fd !== undefined && this.fd !== null) fs.closeSync(this.fd);
		this.fd = null;
		this.ram = null;
		this.size = 0;
		this.ss = 512;
		this.overlay = new Map();
		this.written = null;      // the sectors written to a RAM disk, when mkfs asks
	}
	resetIo(head) {
		this.io = [];
		this.ioOps = [];
		this.ioDropped = 0;
		// the volume's declared bytes (total sectors x bytes per sector)
		const ok = head.length >= 36;
		const bps = ok ? head.readUInt16LE(11) : 0;
		const tot = ok ? (head.readUInt16LE(19) || head.readUInt32LE(32)) : 0;
		this.declared = bps && tot ? bps * tot : this.size;
		this.op('mount');
	}
	op(label) {
		if (this.ioOps[this.ioOps.length - 1] !== label) this.ioOps.push(label);
	}
	note(kind, sector, count, ok) {
		const last = this.io.length ? this.io[this.io.length - 1] : null;
		const op = this.ioOps.length - 1;
		if (last && last[0] === kind && last[3] === op && last[4] === ok && last[1] + last[2] === sector) {
			last[2] += count;
			return;
		}
		if (this.io.length >= MAX_IO && (sector + count) * this.ss <= this.declared) {
			this.ioDropped++;
			return;
		}
		this.io.push([kind, sector, count, op, ok]);
	}
	ioAnswer() {
		return { ss: this.ss, ops: this.ioOps || [], rec: this.io || [], dropped: this.ioDropped || 0 };
	}
	setSS(head) {
		const ss = head.length >= 13 ? head.readUInt16LE(11) : 0;
		// FatFs asks the sector size first; one it cannot use fails the mount
		this.ss = [512, 1024, 2048, 4096].includes(ss) ? ss : 512;
	}
	openFile(image) {
		this.close();
		this.fd = fs.openSync(image, 'r');
		this.size = fs.fstatSync(this.fd).size;
		const head = Buffer.alloc(Math.min(36, this.size));
		fs.readSync(this.fd, head, 0, head.length, 0);
		this.setSS(head);
		this.resetIo(head);
	}
	openRam(buf) {
		this.close();
		this.ram = buf;
		this.size = buf.length;
		this.setSS(buf);
		this.resetIo(buf);
	}
	commit(image) {
		if (!this.overlay.size) return;
		const tmp = image + '.fatfs-tmp';
		fs.copyFileSync(image, tmp);
		const fd = fs.openSync(tmp, 'r+');
		try {
			for (const [sector, data] of this.overlay) fs.writeSync(fd, data, 0, data.length, sector * this.ss);
		} finally {
			fs.closeSync(fd);
		}
		fs.renameSync(tmp, image);
	}
	initialize() { return 0; }
	status() { return 0; }
	read(m, pdrv, buff, sector, count) {
		const a = sector * this.ss, n = count * this.ss;
		this.note('r', sector, count, a + n > this.size ? 0 : 1);
		if (a + n > this.size) return F.RES_ERROR;   // past the end of the image
		const heap = m.HEAPU8;
		if (this.ram) {
			heap.set(this.ram.subarray(a, a + n), buff);
			return F.RES_OK;
		}
		if (fs.readSync(this.fd, heap, buff, n, a) !== n) return F.RES_ERROR;
		for (let i = 0; i < count && this.overlay.size; i++) {
			const o = this.overlay.get(sector + i);
			if (o) heap.set(o, buff + i * this.ss);
		}
		return F.RES_OK;
	}
	write(m, pdrv, buff, sector, count) {
		const a = sector * this.ss, n = count * this.ss;
		this.note('w', sector, count, a + n > this.size ? 0 : 1);
		if (a + n > this.size) return F.RES_ERROR;
		const heap = m.HEAPU8;
		if (this.ram) {
			this.ram.set(heap.subarray(buff, buff + n), a);
			if (this.written) for (let i = 0; i < count; i++) this.written.add(sector + i);
			return F.RES_OK;
		}
		for (let i = 0; i < count; i++) {
			const p = buff + i * this.ss;
			this.overlay.set(sector + i, Buffer.from(heap.subarray(p, p + this.ss)));
		}
		return F.RES_OK;
	}
	ioctl(m, pdrv, cmd, buff) {
		switch (cmd) {
		case F.CTRL_SYNC: return F.RES_OK;
		case F.GET_SECTOR_COUNT: m.setValue(buff, Math.floor(this.size / this.ss), 'i32'); return F.RES_OK;
		case F.GET_SECTOR_SIZE: m.setValue(buff, this.ss, 'i16'); return F.RES_OK;
		case F.GET_BLOCK_SIZE: m.setValue(buff, 1, 'i32'); return F.RES_OK;
		default: return F.RES_PARERR;
		}
	}
}

async function init() {
	F = await import(path.join(__dirname, 'node_modules', 'js-fatfs', 'dist', 'fatfs.js'));
	disk = new Disk();
	ff = await F.create({ diskio: disk, codepage: 437 });
	mem.fs = ff.malloc(F.sizeof_FATFS);
	mem.dir = ff.malloc(F.sizeof_DIR);
	mem.fno = ff.malloc(F.sizeof_FILINFO);
	mem.fil = ff.malloc(F.sizeof_FIL);
	mem.buf = ff.malloc(CHUNK);
	mem.n = ff.malloc(8);
	if (!layoutOk()) throw new Error('FIL/DIR layout is not the one this server reads (js-fatfs changed?)');
}

const frname = (r) => FRNAMES[r] || `FR_${r}`;

function mount(image) {
	disk.openFile(image);
	const r = ff.f_mount(mem.fs, '', 1);
	return r;
}

function unmount() {
	ff.f_mount(0, '', 0);
}

// ------------------------------------------------------------------ reader

function stat(p, traced) {
	if (traced) disk.op(`f_stat ${p}`);
	const r = ff.f_stat(p, mem.fno);
	if (r !== F.FR_OK) return { fr: r };
	return {
		fr: r, name: ff.FILINFO_fname(mem.fno), alt: ff.FILINFO_altname(mem.fno),
		attr: ff.FILINFO_fattrib(mem.fno), size: ff.FILINFO_fsize(mem.fno),
	};
}

function readdir(dirpath, traced) {
	// -> {items: [{name, alt, attr, size}], fr, sclust}; traced: the disk's op
	// labels name each call (the I/O-bounds records)
	const items = [];
	if (traced) disk.op(`f_opendir ${dirpath}`);
	let r = ff.f_opendir(mem.dir, dirpath);
	if (r !== F.FR_OK) return { items, fr: r };
	if (traced) disk.op(`f_readdir ${dirpath}`);
	const sclust = ff.getValue(mem.dir + OFF_SCLUST, 'i32') >>> 0;
	for (;;) {
		r = ff.f_readdir(mem.dir, mem.fno);
		if (r !== F.FR_OK) break;
		const name = ff.FILINFO_fname(mem.fno);
		if (name === '') break;
		items.push({ name, alt: ff.FILINFO_altname(mem.fno), attr: ff.FILINFO_fattrib(mem.fno),
			size: ff.FILINFO_fsize(mem.fno),
			mtime: unixOf(ff.FILINFO_fdate(mem.fno), ff.FILINFO_ftime(mem.fno)) });
	}
	ff.f_closedir(mem.dir);
	return { items, fr: r, sclust };
}

function hashFile(p, limit) {
	// -> {sha256, size} | {fr} | {loop: bytes read}: f_read follows a cluster
	// chain that loops for as long as the size says (up to 4 GiB), so more
	// bytes than the volume holds end the read
	let r = ff.f_open(mem.fil, p, F.FA_READ);
	if (r !== F.FR_OK) return { fr: r };
	const h = crypto.createHash('sha256');
	let total = 0;
	for (;;) {
		if (total > limit) {
			ff.f_close(mem.fil);
			return { loop: total };
		}
		r = ff.f_read(mem.fil, mem.buf, CHUNK, mem.n);
		if (r !== F.FR_OK) break;
		const n = ff.getValue(mem.n, 'i32') >>> 0;
		if (n === 0) break;
		h.update(ff.HEAPU8.subarray(mem.buf, mem.buf + n));
		total += n;
		if (n < CHUNK) break;
	}
	ff.f_close(mem.fil);
	if (r !== F.FR_OK) return { fr: r };
	return { sha256: h.digest('hex'), size: total };
}

function list(image) {
	const r = mount(image);
	if (r !== F.FR_OK) return { error: `f_mount: ${frname(r)}`, io: disk.ioAnswer() };
	const entries = [], complaints = [];
	const limit = disk.size;
	const seen = new Set();          // first clusters of the directories listed
	// each directory: its path as listed (long names) and as FatFs opens it
	// (a long name it cannot look up again, e.g. one with trailing dots
	// another writer kept, is opened by its 8.3 name)
	const walk = (shown, open, depth) => {
		if (depth > MAX_DEPTH) {
			complaints.push(`${shown || '/'}: nested deeper than ${MAX_DEPTH} directories (loop?)`);
			return;
		}
		const d = readdir(open || '/', true);
		if (d.fr !== F.FR_OK) complaints.push(`f_readdir ${shown || '/'}: ${frname(d.fr)}`);
		if (d.sclust !== undefined) {
			// a directory met twice (its entry points at an ancestor, or two
			// entries share it): listed once, so that a loop ends
			if (seen.has(d.sclust)) {
				complaints.push(`${shown || '/'}: directory at cluster ${d.sclust} already listed (loop or cross-link)`);
				return;
			}
			seen.add(d.sclust);
		}
		for (const it of d.items) {
			const sp = shown + '/' + it.name;
			let op = open + '/' + it.name;
			// a name the path API cannot spell (a unit below 0x20 ends the
			// path, '\\' separates, ':' is a drive): as a failed lookup
			const st = unaddressable(it.name) ? { fr: F.FR_INVALID_NAME } : stat(op, true);
			if (st.fr !== F.FR_OK && it.alt && !unaddressable(it.alt)) {
				// the long name cannot be looked up at all: the 8.3 name
				// if it finds the same entry (f_stat's fname is the name
				// asked for; altname, attr and size come from the entry)
				const alt = open + '/' + it.alt;
				const st2 = stat(alt, true);
				if (st2.fr === F.FR_OK && st2.alt === it.alt && st2.attr === it.attr && st2.size === it.size)
					op = alt;
			} else if (st.fr === F.FR_OK && (st.alt !== it.alt || st.attr !== it.attr || st.size !== it.size)) {
				// the long name finds another entry (names FatFs folds to
				// one): what an application opening it gets, as it gets it
				complaints.push(`${sp}: the name opens another entry (${st.alt || st.name})`);
			}
			// the meta keys (docs/listing.md): FILINFO has the attributes
			// and the modify time, no access date
			const e = { path: sp, short83: it.alt, attr: it.attr, attrs: attrLetters(it.attr), mtime: it.mtime };
			if (it.attr & F.AM_DIR) {
				e.type = 'dir';
				entries.push(e);
				walk(sp, op, depth + 1);
			} else {
				e.type = 'file';
				disk.op(`f_open/f_read ${op}`);
				const hf = hashFile(op, limit);
				if (hf.loop !== undefined) {
					complaints.push(`f_read ${sp}: more bytes than the volume holds (${hf.loop}): cluster chain loop`);
					e.size = it.size;
				} else if (hf.fr !== undefined) {
					complaints.push(`f_open/f_read ${sp}: ${frname(hf.fr)}`);
					e.size = it.size;
				} else {
					if (hf.size !== it.size)
						complaints.push(`${sp}: read ${hf.size} bytes, directory entry says ${it.size}`);
					e.size = hf.size;
					e.sha256 = hf.sha256;
				}
				entries.push(e);
			}
		}
	};
	walk('', '', 0);
	disk.op('unmount');
	unmount();
	disk.close();
	return { entries, complaints, io: disk.ioAnswer() };
}

// ------------------------------------------------------------------ writer

const splitp = (p) => p.split('/').filter((c) => c.length);
const trailingSlash = (p) => {
	const c = splitp(p);
	return c.length > 0 && p.endsWith('/') && c[c.length - 1] !== '.' && c[c.length - 1] !== '..';
};
// a component the FatFs path API cannot express: a unit below 0x20 ends the
// path, '\' separates, ':' anywhere in a path is a drive prefix
// (FR_INVALID_DRIVE)
const unaddressable = (c) => /[\x00-\x1f\\:]/.test(c);
const join = (comps) => '/' + comps.join('/');

// The identity of an entry, for rename's checks (same entry, own subtree,
// an ancestor): f_stat cannot give it (its fname is the caller's spelling,
// not the stored one: dir_find leaves the searched name in the LFN buffer).
// A directory is its first cluster (DIR obj.sclust after f_opendir), a
// file the position of its directory entry (FIL dir_sect, dir_ptr after
// f_open); offsets of the wasm32 layout, checked at start (layoutOk).
const OFF_SCLUST = 8, OFF_DIR_SECT = 32, OFF_DIR_PTR = 36;

function ident(comps, isDir) {
	const p = join(comps);
	if (isDir) {
		if (ff.f_opendir(mem.dir, p) !== F.FR_OK) return 'd?' + p;
		const id = 'd' + (ff.getValue(mem.dir + OFF_SCLUST, 'i32') >>> 0);
		ff.f_closedir(mem.dir);
		return id;
	}
	if (ff.f_open(mem.fil, p, F.FA_READ) !== F.FR_OK) return 'f?' + p;
	const id = 'f' + (ff.getValue(mem.fil + OFF_DIR_SECT, 'i32') >>> 0) + ':' +
		(ff.getValue(mem.fil + OFF_DIR_PTR, 'i32') >>> 0);
	ff.f_close(mem.fil);
	return id;
}

function layoutOk() {
	// on a fresh FAT12 RAM disk: a directory's sclust is where the FAT
	// says, a file's dir_ptr points into the FATFS window
	disk.openRam(Buffer.alloc(1 << 20));
	const work = ff.malloc(F.FF_MAX_SS);
	ff.f_mkfs('', { fmt: F.FM_FAT | F.FM_SFD, n_fat: 1, align: 0, n_root: 0, au_size: 0 }, work, F.FF_MAX_SS);
	ff.free(work);
	if (ff.f_mount(mem.fs, '', 1) !== F.FR_OK) return false;
	let ok = ff.f_mkdir('/d') === F.FR_OK && ff.f_open(mem.fil, '/f', F.FA_WRITE | F.FA_CREATE_NEW) === F.FR_OK;
	if (ok) {
		ok = ff.getValue(mem.fil, 'i32') === mem.fs;
		const ptr = ff.getValue(mem.fil + OFF_DIR_PTR, 'i32') >>> 0;
		ok = ok && ptr > mem.fs && ptr < mem.fs + F.sizeof_FATFS;
		ff.f_close(mem.fil);
	}
	ok = ok && ff.f_opendir(mem.dir, '/d') === F.FR_OK && ff.getValue(mem.dir, 'i32') === mem.fs &&
		(ff.getValue(mem.dir + OFF_SCLUST, 'i32') >>> 0) === 2;
	unmount();
	return ok;
}

function resolve(comps) {
	// the VFS path walk: -> {comps (as given, for FatFs), ids (identities),
	// isDir, err}
	let cur = [], ids = [], isDir = true;
	for (const c of comps) {
		if (!isDir) return { err: 'ENOTDIR' };
		if (c === '.') continue;
		if (c === '..') { cur.pop(); ids.pop(); isDir = true; continue; }
		if (unaddressable(c)) return { err: 'ENOENT' };
		const st = stat(join([...cur, c]));
		if (st.fr !== F.FR_OK) return { err: 'ENOENT', fr: st.fr };
		cur.push(c);
		isDir = !!(st.attr & F.AM_DIR);
		ids.push(ident(cur, isDir));
	}
	return { comps: cur, ids, isDir, err: null };
}

function lookup(par, leaf) {
	// -> resolve() of par + leaf, or null when FatFs finds no such entry
	if (unaddressable(leaf) || leaf === '.' || leaf === '..') return null;
	const comps = [...par.comps, leaf];
	const st = stat(join(comps));
	if (st.fr !== F.FR_OK) return null;
	const isDir = !!(st.attr & F.AM_DIR);
	return { comps, ids: [...par.ids, ident(comps, isDir)], isDir, size: st.size };
}

function parentOf(p) {
	// -> {par, leaf, err}; err "ROOT" when p has no component
	const comps = splitp(p);
	if (!comps.length) return { err: 'ROOT' };
	const par = resolve(comps.slice(0, -1));
	if (par.err) return { err: par.err, leaf: comps[comps.length - 1] };
	if (!par.isDir) return { err: 'ENOTDIR', leaf: comps[comps.length - 1] };
	return { par, leaf: comps[comps.length - 1], err: null };
}

const isPrefix = (a, b) => a.length <= b.length && a.every((x, i) => x === b[i]);

// FRESULT of a call that makes a new name (f_mkdir, f_open FA_CREATE_NEW,
// f_rename's new name) -> errno
function newErr(r) {
	switch (r) {
	case F.FR_OK: return 'ok';
	case F.FR_EXIST: return 'EEXIST';
	case F.FR_INVALID_NAME: return 'EINVAL';
	case F.FR_INVALID_DRIVE: return 'EINVAL';
	case F.FR_DENIED: return 'ENOSPC';           // no free cluster, or the fixed root is full
	case F.FR_NO_FILE: case F.FR_NO_PATH: return 'ENOENT';
	case F.FR_WRITE_PROTECTED: return 'EROFS';
	default: return 'EIO';
	}
}

function pattern(seed) {
	const p = Buffer.alloc(256);
	for (let i = 0; i < 256; i++) p[i] = (seed + 31 * i) % 256;
	return p;
}

function writeBytes(fill, size) {
	// f_write size bytes produced by fill(offset, n) -> FRESULT or 'short'
	let done = 0;
	while (done < size) {
		const n = Math.min(CHUNK, size - done);
		ff.HEAPU8.set(fill(done, n), mem.buf);
		const r = ff.f_write(mem.fil, mem.buf, n, mem.n);
		if (r !== F.FR_OK) return r;
		const w = ff.getValue(mem.n, 'i32') >>> 0;
		done += w;
		if (w < n) return 'short';
	}
	return F.FR_OK;
}

function contentFill(seed) {
	const pat = pattern(seed % 256);
	const big = Buffer.alloc(CHUNK);
	for (let i = 0; i < CHUNK; i += 256) pat.copy(big, i);
	// CHUNK is a multiple of 256, so every chunk starts at pattern index 0
	return (off, n) => big.subarray(0, n);
}
const zeroFill = () => { const z = Buffer.alloc(CHUNK); return (off, n) => z.subarray(0, n); };

function writeErr(r) {
	if (r === F.FR_OK) return 'ok';
	if (r === 'short') return 'ENOSPC';          // the disk is full
	if (r === F.FR_DENIED) return 'ENOSPC';
	return 'EIO';
}

// ------------------------------------------------------- the second grammar
// js-fatfs 0.2.1's WebAssembly exports no f_chmod, f_utime, f_setlabel
// nor f_getlabel (its fatfs.d.ts declares them; a call throws "func is
// not a function": FatFs built without FF_USE_CHMOD and FF_USE_LABEL), so
// of the second grammar only truncate is FatFs's (the registry's supports).

// [fdate, ftime] -> seconds since the epoch, as Linux's fat_time_fat2unix
// reads them (a month or day 0 counts as 1)
function unixOf(fdate, ftime) {
	const y = 1980 + (fdate >> 9), mo = Math.max(1, (fdate >> 5) & 15), dd = Math.max(1, fdate & 31);
	return Date.UTC(y, mo - 1, dd, ftime >> 11, (ftime >> 5) & 63, (ftime & 31) * 2) / 1000;
}

const attrLetters = (a) => [['r', 1], ['h', 2], ['s', 4], ['a', 0x20]].filter(([, b]) => a & b).map(([c]) => c).join('') || '-';

// is the entry read-only (f_unlink and f_open for writing refuse it)?
const readOnly = (comps) => { const st = stat(join(comps)); return st.fr === F.FR_OK && !!(st.attr & F.AM_RDO); };

const META = {
	truncate(p, size) {
		const t = resolve(splitp(p));
		if (t.err) return [t.err];
		if (t.isDir) return ['EISDIR'];
		if (trailingSlash(p)) return ['ENOTDIR'];
		let r = ff.f_open(mem.fil, join(t.comps), F.FA_WRITE | F.FA_OPEN_EXISTING);
		if (r !== F.FR_OK) return [r === F.FR_DENIED ? 'EACCES' : 'EIO', r];
		const fsize = ff.f_size(mem.fil);
		let w;
		if (size > fsize) {
			// f_lseek past the end leaves the bytes undefined: zeros written
			w = ff.f_lseek(mem.fil, fsize);
			if (w === F.FR_OK) w = writeBytes(zeroFill(), size - fsize);
		} else {
			w = ff.f_lseek(mem.fil, size);
			if (w === F.FR_OK) w = ff.f_truncate(mem.fil);
		}
		const c = ff.f_close(mem.fil);
		if (w === F.FR_OK && c !== F.FR_OK) w = c;
		return [writeErr(w), typeof w === 'number' ? w : null];
	},
};

const OPS = {
	...META,
	mkdir(p) {
		const q = parentOf(p);
		if (q.err === 'ROOT') return ['EEXIST'];
		if (q.err) return [q.err];
		if (q.leaf === '.' || q.leaf === '..') return ['EEXIST'];
		if (unaddressable(q.leaf)) return ['EINVAL'];
		const r = ff.f_mkdir(join([...q.par.comps, q.leaf]));
		return [newErr(r), r];
	},
	create(p, size, seed) {
		const q = parentOf(p);
		if (q.err === 'ROOT') return ['EEXIST'];
		if (q.err) return [q.err];
		if (q.leaf === '.' || q.leaf === '..') return ['EEXIST'];
		if (trailingSlash(p)) return ['EISDIR'];
		if (lookup(q.par, q.leaf)) return ['EEXIST'];
		if (unaddressable(q.leaf)) return ['EINVAL'];
		let r = ff.f_open(mem.fil, join([...q.par.comps, q.leaf]), F.FA_WRITE | F.FA_CREATE_NEW);
		if (r !== F.FR_OK) return [newErr(r), r];
		let w = writeBytes(contentFill(seed), size);
		const c = ff.f_close(mem.fil);
		if (w === F.FR_OK && c !== F.FR_OK) w = c;
		return [writeErr(w), typeof w === 'number' ? w : null];
	},
	write(p, off, size, seed) {
		const t = resolve(splitp(p));
		if (t.err) return [t.err];
		if (t.isDir) return ['EISDIR'];
		if (trailingSlash(p)) return ['ENOTDIR'];
		if (size === 0) return ['ok'];        // pwrite of 0 bytes does not extend the file
		let r = ff.f_open(mem.fil, join(t.comps), F.FA_WRITE | F.FA_OPEN_EXISTING);
		if (r !== F.FR_OK) return [r === F.FR_DENIED ? 'EACCES' : 'EIO', r];
		const fsize = ff.f_size(mem.fil);
		let w = F.FR_OK;
		if (off > fsize) {
			// f_lseek past the end leaves the new bytes undefined (FatFs
			// documents it): write the zeros pwrite promises
			w = ff.f_lseek(mem.fil, fsize);
			if (w === F.FR_OK) w = writeBytes(zeroFill(), off - fsize);
		} else {
			w = ff.f_lseek(mem.fil, off);
		}
		if (w === F.FR_OK) w = writeBytes(contentFill(seed), size);
		const c = ff.f_close(mem.fil);
		if (w === F.FR_OK && c !== F.FR_OK) w = c;
		return [writeErr(w), typeof w === 'number' ? w : null];
	},
	unlink(p) {
		const t = resolve(splitp(p));
		if (t.err) return [t.err];
		if (t.isDir) return ['EISDIR'];
		if (trailingSlash(p)) return ['ENOTDIR'];
		const r = ff.f_unlink(join(t.comps));
		if (r === F.FR_OK) return ['ok', r];
		return [r === F.FR_DENIED ? 'EACCES' : (r === F.FR_NO_FILE ? 'ENOENT' : 'EIO'), r];
	},
	rmdir(p) {
		const comps = splitp(p);
		if (comps.length && (comps[comps.length - 1] === '.' || comps[comps.length - 1] === '..')) {
			const q = parentOf(p);
			if (q.err) return [q.err];
			return [q.leaf === '.' ? 'EINVAL' : 'ENOTEMPTY'];
		}
		const t = resolve(comps);
		if (t.err) return [t.err];
		if (!t.comps.length) return ['EBUSY'];
		if (!t.isDir) return ['ENOTDIR'];
		const ro = readOnly(t.comps);
		const r = ff.f_unlink(join(t.comps));
		if (r === F.FR_OK) return ['ok', r];
		// f_unlink refuses a read-only entry, and a directory that is not
		// empty, with FR_DENIED
		return [r === F.FR_DENIED ? (ro ? 'EACCES' : 'ENOTEMPTY') : (r === F.FR_NO_FILE ? 'ENOENT' : 'EIO'), r];
	},
	rename(a, b) {
		const sa = splitp(a), sb = splitp(b);
		const spar = resolve(sa.slice(0, -1));
		if (spar.err) return [spar.err];
		if (!spar.isDir) return ['ENOTDIR'];
		const dpar = resolve(sb.slice(0, -1));
		if (dpar.err) return [dpar.err];
		if (!dpar.isDir) return ['ENOTDIR'];
		const sl = sa[sa.length - 1], dl = sb[sb.length - 1];
		if (!sa.length || !sb.length || sl === '.' || sl === '..' || dl === '.' || dl === '..')
			return ['EBUSY'];
		const src = lookup(spar, sl);
		if (!src) return ['ENOENT'];
		if (!src.isDir && (trailingSlash(a) || trailingSlash(b))) return ['ENOTDIR'];
		if (isPrefix(src.ids, dpar.ids)) return ['EINVAL'];     // into its own subtree
		const dst = lookup(dpar, dl);
		if (dst && isPrefix(dst.ids, spar.ids)) return ['ENOTEMPTY'];  // onto an ancestor
		const to = join([...dpar.comps, dl]);
		if (dst && !(dst.ids.length === src.ids.length && isPrefix(dst.ids, src.ids))) {
			if (src.isDir && !dst.isDir) return ['ENOTDIR'];
			if (!src.isDir && dst.isDir) return ['EISDIR'];
			// f_rename never replaces (FR_EXIST): ask it once, so the raw
			// record shows it, then remove the target as a POSIX layer
			// over FatFs must (f_unlink refuses a directory that is not
			// empty: ENOTEMPTY) and rename
			const r0 = ff.f_rename(join(src.comps), to);
			if (r0 !== F.FR_EXIST) return [newErr(r0), r0];
			const ro = readOnly(dst.comps);
			const ru = ff.f_unlink(join(dst.comps));
			if (ru !== F.FR_OK) return [ru === F.FR_DENIED ? (ro ? 'EACCES' : 'ENOTEMPTY') : 'EIO', ru];
		}
		if (!dst && unaddressable(dl)) return ['EINVAL'];
		const r = ff.f_rename(join(src.comps), to);
		if (dst && !(dst.ids.length === src.ids.length && isPrefix(dst.ids, src.ids)))
			return [newErr(r), `FR_EXIST,${frname(F.FR_OK)},${frname(r)}`];   // the three calls
		return [newErr(r), r];
	},
};

// which candidate pairs of characters FatFs takes for the same letter in a
// long name (its ff_wtoupper folding, observed through f_stat): on a fresh
// FAT12 RAM disk, make "/x"+a, look up "/x"+b, remove it
function casefold(pairs) {
	disk.openRam(Buffer.alloc(1 << 20));
	const work = ff.malloc(F.FF_MAX_SS);
	let r = ff.f_mkfs('', { fmt: F.FM_FAT | F.FM_SFD, n_fat: 1, align: 0, n_root: 0, au_size: 0 }, work, F.FF_MAX_SS);
	ff.free(work);
	if (r !== F.FR_OK) return { error: `f_mkfs: ${frname(r)}` };
	r = ff.f_mount(mem.fs, '', 1);
	if (r !== F.FR_OK) return { error: `f_mount: ${frname(r)}` };
	const same = [];
	for (const [a, b] of pairs) {
		r = ff.f_mkdir('/x' + a);
		if (r !== F.FR_OK) return { error: `f_mkdir x${a}: ${frname(r)}` };
		if (ff.f_stat('/x' + b, mem.fno) === F.FR_OK) same.push([a, b]);
		r = ff.f_unlink('/x' + a);
		if (r !== F.FR_OK) return { error: `f_unlink x${a}: ${frname(r)}` };
	}
	unmount();
	return { same };
}

// f_mkfs on a RAM disk of size bytes and sectors of ss bytes (FF_MIN_SS 512 ..
// FF_MAX_SS 4096 in this build), always super-floppy (FM_SFD: without it
// FatFs writes a partition table and puts the volume after it, and the
// readers read volumes, not disks); the other MKFS_PARM fields as asked, 0
// leaving FatFs its default. The disk answers GET_BLOCK_SIZE 1, so align 0
// aligns nothing. FatFs takes the volume serial from get_fattime: the clock
// is held at FIXED_TIME while it runs, so the same request gives the same
// bytes. The image file is made size bytes long and only the sectors FatFs
// wrote are written to it: the rest of it must read as zeros, as the
// Python side's fresh file does (f_mkfs writes the system area alone).
const FIXED_TIME = Date.UTC(2020, 0, 1);
const MKFS_WORK = 1 << 16;

function mkfs(req) {
	const ss = req.ss || 512;
	if (![512, 1024, 2048, 4096].includes(ss) || ss > F.FF_MAX_SS)
		return { error: `sector size ${ss}: this FatFs build takes 512..${F.FF_MAX_SS}` };
	disk.openRam(Buffer.alloc(req.size));
	disk.ss = ss;
	disk.written = new Set();
	const fmt = (req.fmt === 'fat32' ? F.FM_FAT32 : F.FM_FAT) | F.FM_SFD;
	const opt = { fmt, n_fat: req.n_fat || 0, align: req.align || 0, n_root: req.n_root || 0,
		au_size: req.au_size || 0 };
	const work = ff.malloc(MKFS_WORK);
	const now = Date.now;
	let r;
	try {
		Date.now = () => FIXED_TIME;
		r = ff.f_mkfs('', opt, work, MKFS_WORK);
	} finally {
		Date.now = now;
		ff.free(work);
	}
	const ram = disk.ram, written = [...disk.written].sort((x, y) => x - y);
	disk.close();
	if (r !== F.FR_OK) return { error: `f_mkfs: ${frname(r)}` };
	const fd = fs.openSync(req.image, 'r+');
	try {
		fs.ftruncateSync(fd, req.size);
		for (const sec of written) fs.writeSync(fd, ram, sec * ss, ss, sec * ss);
	} finally {
		fs.closeSync(fd);
	}
	return { ok: true, sectors: written.length };
}

// for tests of the restart path (tests/test_fatfs.py): a genuine
// WebAssembly trap, f_read of a file into an address past the module's
// memory (memcpy from the sector buffer: memory access out of bounds)
function trap(image) {
	const r = mount(image);
	if (r !== F.FR_OK) return { error: `f_mount: ${frname(r)}` };
	const d = readdir('/');
	const f = d.items.find((it) => !(it.attr & F.AM_DIR) && it.size > 0);
	if (!f) return { error: 'no file to read' };
	ff.f_open(mem.fil, '/' + f.name, F.FA_READ);
	ff.f_read(mem.fil, ff.HEAPU8.length + 4096, 1, mem.n);
	return { error: 'f_read past the memory did not trap' };
}

function apply(image, ops) {
	const r = mount(image);
	if (r !== F.FR_OK) return { error: `f_mount: ${frname(r)}`, io: disk.ioAnswer() };
	const results = [], frs = [];
	for (const o of ops) {
		const [kind, ...args] = o;
		disk.op([kind, ...args].join(' '));
		const fn = OPS[kind];
		let res;
		if (!fn) {
			res = ['EINVAL'];
		} else if (args.some((x) => typeof x === 'string' && Buffer.byteLength(x, 'utf8') >= PATH_MAX)) {
			res = ['ENAMETOOLONG'];
		} else {
			res = fn(...args);
		}
		results.push(res[0]);
		frs.push(res[1] === undefined || res[1] === null ? null
			: (typeof res[1] === 'string' ? res[1] : frname(res[1])));
	}
	disk.op('unmount');
	unmount();
	disk.commit(image);
	disk.close();
	return { results, fr: frs, io: disk.ioAnswer() };
}

// ------------------------------------------------------------------ loop

function answer(o) {
	let s;
	try {
		s = JSON.stringify(o);
	} catch (e) {
		s = JSON.stringify({ id: o.id, error: `unencodable answer: ${e.message}` });
	}
	process.stdout.write(s + '\n');
}

async function main() {
	try {
		await init();
	} catch (e) {
		answer({ id: 0, error: `cannot start FatFs: ${e.message}`, fatal: true });
		process.exit(2);
	}
	const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
	for await (const line of rl) {
		if (!line.trim()) continue;
		let req;
		try {
			req = JSON.parse(line);
		} catch (e) {
			answer({ id: null, error: `bad request: ${e.message}` });
			continue;
		}
		const id = req.id;
		try {
			if (req.op === 'ping') answer({ id, ok: true });
			else if (req.op === 'list') answer({ id, ...list(req.image) });
			else if (req.op === 'apply') answer({ id, ...apply(req.image, req.ops) });
			else if (req.op === 'casefold') answer({ id, ...casefold(req.pairs) });
			else if (req.op === 'mkfs') answer({ id, ...mkfs(req) });
			else if (req.op === 'trap') answer({ id, ...trap(req.image) });
			else if (req.op === 'hang') for (;;) { /* as FatFs stuck in a loop */ }
			else answer({ id, error: `unknown op ${req.op}` });
		} catch (e) {
			if (e && e.code && typeof e.code === 'string' && e.code.startsWith('E') && !(e instanceof WebAssembly.RuntimeError)) {
				// host I/O (no such image, ...): not FatFs's fault, the process stays usable
				try { unmount(); } catch (e2) { /* a trap here ends the process below */ }
				answer({ id, error: `${e.code}: ${e.message}` });
				continue;
			}
			answer({ id, error: `trap: ${e && e.name}: ${e && e.message}`, trap: true, io: disk.ioAnswer() });
			process.exit(3);
		}
	}
}

main();
