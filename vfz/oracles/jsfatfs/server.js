// npm fatfs 0.10.8 (natevw, pure JavaScript) serving vfatfuzz requests: one
// JSON object a line on stdin, one answer a line on stdout.
//
//   {"id": N, "op": "ping"}                        -> {"id": N, "ok": true}
//   {"id": N, "op": "list", "image": PATH}         -> {"id": N, "entries": [...], "complaints": [...]}
//                                                    | {"id": N, "error": "..."}
//   {"id": N, "op": "apply", "image": PATH, "ops": [[kind, arg...], ...]}
//                                                  -> {"id": N, "results": ["ok"|"EEXIST"|...],
//                                                      "codes": [the package's code or null, ...]}
//   {"id": N, "op": "truncate", "image": PATH, "path": P, "size": N}
//                                                  -> {"id": N, "result": "ok"|errno}
//       (fs.truncate, which op-scripts do not have: for the tests of the
//       freed-cluster values)
//   {"id": N, "op": "hang"}                        for the tests of the restart path
//
// One fs instance (fatfs.createFileSystem) per image, over a volume driver
// that reads the image file and keeps the package's writes in an overlay of
// sectors; "apply" writes them back atomically (a copy of the image, the
// sectors written, rename) after the last op.
//
// The package throws from inside its own lock (fifolock) for a name its
// longname() refuses ('"', '|', DEL, a unit below 0x20, more than 255
// units): the throw escapes every callback and the instance never answers
// again. Such a throw, or any other exception that reaches the event loop,
// is answered by the uncaughtException handler with {"id": N, "error":
// "uncaught: ...", "fatal": true, "results": [the ops answered before]}
// and the process exits (status 3): the Python side starts a fresh one. A
// hang is the Python side's to time out. stdout carries answers only.
//
// The op semantics (POSIX, as Linux answers; vfz/oracles/jsfatfs/__init__.py
// documents the contract) are split in two: what Linux decides in the VFS
// (the path walk with "." and "..", trailing slashes, the root) is decided
// here, with the package's own fs.stat as the lookup; what Linux decides in
// the file system (names, clashes, space) the package decides.
'use strict';

// FAT keeps local time; the package reads and writes it with Date's local
// getters: UTC here, as in the kernel oracle
process.env.TZ = 'UTC';

const fs = require('fs');
const crypto = require('crypto');
const readline = require('readline');

// keep stdout for answers: the package logs through console.log
console.log = console.error;
console.info = console.error;
console.warn = console.error;

const fatfs = require('fatfs');

const PATH_MAX = 4096;
const MAX_DEPTH = 64;           // deeper nesting is a directory loop
const MAX_ENTRIES = 20000;      // a listing larger than this is a loop too

// ------------------------------------------------------------------ timers
// fs.close releases the file's cached entry 500 ms later (setTimeout in
// the package's index.js); what the package then finds in its path cache
// would depend on the machine's speed. A script's ops run as one burst:
// the glue holds those releases until the script ends.
const realSetTimeout = global.setTimeout;
let held = null;                // [fn] while a script runs
global.setTimeout = function (fn, ms, ...args) {
	if (held && ms === 500) {
		held.push(() => fn(...args));
		return { unref() {}, ref() {}, hasRef() { return false; } };
	}
	return realSetTimeout(fn, ms, ...args);
};

// ------------------------------------------------------------------ disk

// The volume driver the package sees: the image file, read sector by
// sector, with the package's writes kept in an overlay until commit().
class Disk {
	constructor(image, ro) {
		this.fd = fs.openSync(image, 'r');
		this.size = fs.fstatSync(this.fd).size;
		const head = Buffer.alloc(13);
		fs.readSync(this.fd, head, 0, Math.min(13, this.size), 0);
		const ss = head.readUInt16LE(11);
		// the package refuses a volume whose BPB sector size is not the
		// driver's: give it the BPB's when it is one a disk can have
		this.ss = [512, 1024, 2048, 4096].includes(ss) ? ss : 512;
		this.overlay = new Map();
		this.driver = {
			sectorSize: this.ss,
			numSectors: Math.floor(this.size / this.ss),
			readSectors: (i, dest, cb) => this.read(i, dest, cb),
		};
		if (!ro) this.driver.writeSectors = (i, data, cb) => this.write(i, data, cb);
	}
	read(i, dest, cb) {
		const a = i * this.ss;
		// a sector before the image (the package computes one for cluster 0 of an empty
		// file: negative with 64 KiB clusters) is an error of the read, as past its end
		if (a < 0) return setImmediate(cb, Object.assign(new Error('read before the start of the image'), { code: 'IO' }));
		if (a + dest.length > this.size) return setImmediate(cb, Object.assign(new Error('read past the end of the image'), { code: 'IO' }));
		fs.readSync(this.fd, dest, 0, dest.length, a);
		for (let k = 0; k < dest.length / this.ss && this.overlay.size; k++) {
			const o = this.overlay.get(i + k);
			if (o) o.copy(dest, k * this.ss);
		}
		setImmediate(cb, null, dest);
	}
	write(i, data, cb) {
		if (i < 0) return setImmediate(cb, Object.assign(new Error('write before the start of the image'), { code: 'IO' }));
		if (i * this.ss + data.length > this.size) return setImmediate(cb, Object.assign(new Error('write past the end of the image'), { code: 'IO' }));
		for (let k = 0; k < data.length / this.ss; k++)
			this.overlay.set(i + k, Buffer.from(data.subarray(k * this.ss, (k + 1) * this.ss)));
		setImmediate(cb, null);
	}
	commit(image) {
		if (!this.overlay.size) return;
		const tmp = image + '.jsfatfs-tmp';
		fs.copyFileSync(image, tmp);
		const fd = fs.openSync(tmp, 'r+');
		try {
			for (const [sector, data] of this.overlay) fs.writeSync(fd, data, 0, data.length, sector * this.ss);
		} finally {
			fs.closeSync(fd);
		}
		fs.renameSync(tmp, image);
	}
	close() {
		if (this.fd !== null) fs.closeSync(this.fd);
		this.fd = null;
	}
}

function mount(disk, ro) {
	// -> Promise of the package's fs, or an Error when it refuses the volume
	return new Promise((resolve, reject) => {
		const v = fatfs.createFileSystem(disk.driver, { ro, umask: 0, uid: 0, gid: 0 }, (e) => {
			if (e) reject(e);
			else resolve(v);
		});
	});
}

// The package's error codes are errno names without the E ('NOENT');
// anything without a code is its own Error (a string, kept).
const errno = (e) => (e && typeof e.code === 'string' ? 'E' + e.code : 'EIO');
const describe = (e) => (e && typeof e.code === 'string' ? e.code : `${e && e.name}: ${e && e.message}`);

function call(fn, ...args) {
	// fn(...args, cb) -> Promise of [error or null, value]
	return new Promise((resolve) => fn(...args, (e, v) => resolve([e || null, v])));
}

// ------------------------------------------------------------------ reader

async function list(image) {
	const disk = new Disk(image, true);
	let v;
	try {
		v = await mount(disk, true);
	} catch (e) {
		disk.close();
		return { error: `createFileSystem: ${e.message}` };
	}
	const entries = [], complaints = [];
	async function walk(dir, depth) {
		if (depth > MAX_DEPTH) {
			complaints.push(`${dir}: nested more than ${MAX_DEPTH} deep (directory loop)`);
			return;
		}
		const [e, names] = await call(v.readdir, dir || '/');
		if (e) {
			complaints.push(`readdir ${dir || '/'}: ${describe(e)}`);
			return;
		}
		for (const n of names) {
			if (entries.length >= MAX_ENTRIES) {
				complaints.push(`more than ${MAX_ENTRIES} entries (directory loop)`);
				return;
			}
			const p = dir + '/' + n;
			const [es, st] = await call(v.stat, p);
			if (es && es.code !== 'ISDIR') {
				complaints.push(`stat ${p}: ${describe(es)}`);
				continue;
			}
			if (es) {      // fs.stat of a directory answers EISDIR (it opens it as a file)
				entries.push({ path: p, type: 'dir' });
				await walk(p, depth + 1);
				continue;
			}
			// the meta keys (docs/listing.md) from fs.stat's mode (modmode
			// 0111) and dates; a directory has no stat (EISDIR above)
			const m = st.mode;
			const attrs = (m & 0o200 ? '' : 'r') + (m & 0o1 ? 'h' : '') + (m & 0o10 ? 's' : '') + (m & 0o100 ? 'a' : '');
			const ent = { path: p, type: 'file', size: st.size, attrs: attrs || '-',
				mtime: Math.floor(st.mtime.getTime() / 1000), atime: Math.floor(st.atime.getTime() / 1000) };
			const [er, data] = await call(v.readFile, p);
			if (er) complaints.push(`readFile ${p}: ${describe(er)}`);
			else {
				if (data.length !== st.size) complaints.push(`${p}: read ${data.length} bytes, stat says ${st.size}`);
				ent.size = data.length;
				ent.sha256 = crypto.createHash('sha256').update(data).digest('hex');
			}
			entries.push(ent);
		}
	}
	await walk('', 0);
	disk.close();
	return { entries, complaints };
}

// ------------------------------------------------------------------ writer

const splitp = (p) => p.split('/').filter((c) => c.length);
const join = (comps) => '/' + comps.join('/');
const trailingSlash = (p) => {
	const c = splitp(p);
	return c.length > 0 && p.endsWith('/') && c[c.length - 1] !== '.' && c[c.length - 1] !== '..';
};

function pattern(seed, size) {
	const p = Buffer.alloc(256);
	for (let i = 0; i < 256; i++) p[i] = (seed % 256 + 31 * i) % 256;
	const b = Buffer.alloc(size);
	for (let i = 0; i < size; i += 256) p.copy(b, i, 0, Math.min(256, size - i));
	return b;
}

class Script {
	constructor(v) {
		this.v = v;
	}

	async resolve(comps) {
		// the VFS path walk over fs.stat: -> {comps, isDir, err}
		const cur = [];
		let isDir = true;
		for (const c of comps) {
			if (!isDir) return { err: 'ENOTDIR' };
			if (c === '.') continue;
			if (c === '..') { cur.pop(); isDir = true; continue; }
			const [e] = await call(this.v.stat, join([...cur, c]));
			// fs.stat of a directory answers EISDIR (it opens it as a file)
			if (e && e.code !== 'ISDIR') return { err: e.code === 'NOTDIR' ? 'ENOTDIR' : 'ENOENT', code: describe(e) };
			cur.push(c);
			isDir = !!e;
		}
		return { comps: cur, isDir, err: null };
	}

	async parentOf(p) {
		// -> {par, leaf, err}; err "ROOT" when p has no component
		const comps = splitp(p);
		if (!comps.length) return { err: 'ROOT' };
		const par = await this.resolve(comps.slice(0, -1));
		if (par.err) return { err: par.err };
		if (!par.isDir) return { err: 'ENOTDIR' };
		return { par, leaf: comps[comps.length - 1], err: null };
	}

	async mkdir(p) {
		const q = await this.parentOf(p);
		if (q.err === 'ROOT') return ['EEXIST'];
		if (q.err) return [q.err];
		if (q.leaf === '.' || q.leaf === '..') return ['EEXIST'];
		const [e] = await call(this.v.mkdir, join([...q.par.comps, q.leaf]));
		return e ? [errno(e), describe(e)] : ['ok'];
	}

	async create(p, size, seed) {
		const q = await this.parentOf(p);
		if (q.err === 'ROOT') return ['EEXIST'];
		if (q.err) return [q.err];
		if (q.leaf === '.' || q.leaf === '..') return ['EEXIST'];
		if (trailingSlash(p)) return ['EISDIR'];   // open(O_CREAT) checks the slash before it looks
		const [e, fd] = await call(this.v.open, join([...q.par.comps, q.leaf]), 'wx');
		if (e) return [errno(e), describe(e)];
		return this.fill(fd, 0, size, seed);
	}

	async write(p, off, size, seed) {
		const t = await this.resolve(splitp(p));
		if (t.err) return [t.err];
		if (t.isDir) return ['EISDIR'];
		if (trailingSlash(p)) return ['ENOTDIR'];
		if (size === 0) return ['ok'];   // pwrite of 0 bytes does not extend the file
		const [e, fd] = await call(this.v.open, join(t.comps), 'r+');
		if (e) return [errno(e), describe(e)];
		return this.fill(fd, off, size, seed);
	}

	// ---- the second grammar: fs.truncate, fs.chmod, fs.utimes (the
	// package has no label). The package opens the path for writing in each
	// (flag 'r+', '\\r+' for chmod, which takes a directory): a read-only
	// entry is EACCES and utimes of a directory EISDIR (model profile knobs
	// ro_refuses and touch_dir)

	async opened(p) {
		// open()'s walk: -> {t, err}
		const t = await this.resolve(splitp(p));
		if (t.err) return { err: t.err };
		if (trailingSlash(p) && !t.isDir) return { err: 'ENOTDIR' };
		return { t };
	}

	async truncate(p, size) {
		const t = await this.resolve(splitp(p));
		if (t.err) return [t.err];
		if (t.isDir) return ['EISDIR'];
		if (trailingSlash(p)) return ['ENOTDIR'];
		const [e] = await call(this.v.truncate, join(t.comps), size);
		return e ? [errno(e), describe(e)] : ['ok'];
	}

	async chattr(p, letters) {
		const o = await this.opened(p);
		if (o.err) return [o.err];
		if (!o.t.comps.length) return [letters.replace('-', '') ? 'EINVAL' : 'ok'];   // the root has no entry
		// the package's modmode 0111 (its default): read-only is the user's
		// write bit unset, archive / system / hidden the x bits of user /
		// group / other
		const has = (c) => letters.includes(c);
		const mode = (has('r') ? 0o444 : 0o666) | (has('a') ? 0o100 : 0) | (has('s') ? 0o10 : 0) | (has('h') ? 0o1 : 0);
		const [e] = await call(this.v.chmod, join(o.t.comps), mode);
		return e ? [errno(e), describe(e)] : ['ok'];
	}

	async touch(p, mtime, atime) {
		const o = await this.opened(p);
		if (o.err) return [o.err];
		if (!o.t.comps.length) return ['ok'];        // the root has no times
		const [e] = await call(this.v.utimes, join(o.t.comps), new Date(atime * 1000), new Date(mtime * 1000));
		return e ? [errno(e), describe(e)] : ['ok'];
	}

	async fill(fd, off, size, seed) {
		// one fs.write of the op's bytes at off (the package zero-fills a
		// gap past the end itself), then fs.close
		let e = null;
		if (size > 0) [e] = await call(this.v.write, fd, pattern(seed, size), 0, size, off);
		const [ec] = await call(this.v.close, fd);
		e = e || ec;
		return e ? [errno(e), describe(e)] : ['ok'];
	}
}

let current = null;             // the request running: {id, results, codes, disk, image}

// A throw that escapes the package ends the process: what the package wrote
// before it is on the disk, as it would be on a real volume (its driver
// writes through), so the image gets it -- the readers then see the state
// the script reached (a chattr that made a directory a label, say)
function commitThrown(c) {
	if (!c || !c.disk) return;
	try {
		c.disk.commit(c.image);
	} catch (e) { /* host I/O: the answer still reports the throw */ }
}

async function apply(image, ops, id) {
	const disk = new Disk(image, false);
	let v;
	try {
		v = await mount(disk, false);
	} catch (e) {
		disk.close();
		return { error: `createFileSystem: ${e.message}` };
	}
	const s = new Script(v);
	const results = [], codes = [];
	current = { id, results, codes, disk, image };
	held = [];
	for (const o of ops) {
		const [kind, ...args] = o;
		let res;
		if (!['mkdir', 'create', 'write', 'truncate', 'chattr', 'touch'].includes(kind)) res = ['ENOSYS', 'not in the package'];
		else if (args.some((x) => typeof x === 'string' && Buffer.byteLength(x, 'utf8') >= PATH_MAX)) res = ['ENAMETOOLONG'];
		else res = await s[kind](...args);
		results.push(res[0]);
		codes.push(res[1] === undefined ? null : res[1]);
	}
	const releases = held;
	held = null;
	for (const f of releases) f();
	disk.commit(image);
	disk.close();
	current = null;
	return { results, codes };
}

async function truncate(image, p, size) {
	const disk = new Disk(image, false);
	const v = await mount(disk, false);
	const [e] = await call(v.truncate, p, size);
	disk.commit(image);
	disk.close();
	return { result: e ? errno(e) : 'ok' };
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

let reqId = null;

process.on('uncaughtException', (e) => {
	// the package threw outside every callback (its instance is hung):
	// report what was answered and end the process
	const c = current && current.id === reqId ? current : { results: [], codes: [] };
	commitThrown(c);
	answer({ id: reqId, error: `uncaught: ${e && e.name}: ${e && e.message}`, fatal: true,
		results: c.results, codes: c.codes,
		stack: String(e && e.stack || '').split('\n').slice(1, 5).map((s) => s.trim()).join(' | ') });
	process.exit(3);
});

async function main() {
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
		const id = reqId = req.id;
		try {
			if (req.op === 'ping') answer({ id, ok: true });
			else if (req.op === 'list') answer({ id, ...await list(req.image) });
			else if (req.op === 'apply') answer({ id, ...await apply(req.image, req.ops, id) });
			else if (req.op === 'truncate') answer({ id, ...await truncate(req.image, req.path, req.size) });
			else if (req.op === 'hang') for (;;) { /* as the package stuck in a loop */ }
			else answer({ id, error: `unknown op ${req.op}` });
		} catch (e) {
			if (e && typeof e.code === 'string' && e.code.startsWith('E')) {
				// host I/O (no such image, ...): not the package's fault
				answer({ id, error: `${e.code}: ${e.message}` });
				continue;
			}
			// a synchronous throw of the package: its instance is hung
			commitThrown(current);
			answer({ id, error: `thrown: ${e && e.name}: ${e && e.message}`, fatal: true,
				results: current ? current.results : [], codes: current ? current.codes : [] });
			process.exit(3);
		}
	}
}

main();
