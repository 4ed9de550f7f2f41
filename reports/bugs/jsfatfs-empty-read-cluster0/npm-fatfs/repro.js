'use strict';
// npm fatfs (natevw) on a FAT image file, no other code: node repro.js IMAGE OPS.json
// ops.json: [[kind, path, ...args, data file or null], ...]; each op is one
// call of the package's fs API and its answer is printed as
//   result N ok|E<code> CALL
// A throw that escapes the package (not an error given to the callback) is
//   throw N MESSAGE            and then the instance is probed with fs.stat('/'):
//   stuck SECONDS              no answer within PROBE_S seconds (default 2; the ops after it are not run)
// An op whose callback never comes within HANG_S seconds is "hang N SECONDS".
// Then the image is written back, a fresh instance lists it:
//   d PATH | f PATH SIZE SHA256 | complaint TEXT
// and the image's FAT structures are read directly:
//   fact CHECK TEXT            what was found (for the record)
//   symptom CHECK TEXT         what a correct FAT writer never leaves
process.env.TZ = 'UTC';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const out = (s) => process.stdout.write(s + '\n');
console.log = console.error; console.info = console.error; console.warn = console.error;
const fatfs = require('fatfs');
const HANG_S = Number(process.env.HANG_S || 10);
// after a throw, how long fs.stat('/') on the same instance is given (a live one answers in ms)
const PROBE_S = Number(process.env.PROBE_S || 2);
const [image, opsFile] = process.argv.slice(2);
const img = fs.readFileSync(image);
const ss = [512, 1024, 2048, 4096].includes(img.readUInt16LE(11)) ? img.readUInt16LE(11) : 512;

function driver() {       // the image in memory: every write lands in img
    return {
        sectorSize: ss, numSectors: Math.floor(img.length / ss),
        readSectors(i, dest, cb) {
            if (i < 0) return setImmediate(cb, new Error(`read of sector ${i}, before the image`));
            if (i * ss + dest.length > img.length) return setImmediate(cb, new Error('read past the image'));
            img.copy(dest, 0, i * ss, i * ss + dest.length); setImmediate(cb, null, dest);
        },
        writeSectors(i, data, cb) {
            if (i < 0) return setImmediate(cb, new Error(`write of sector ${i}, before the image`));
            if (i * ss + data.length > img.length) return setImmediate(cb, new Error('write past the image'));
            data.copy(img, i * ss); setImmediate(cb, null);
        },
    };
}
const mount = () => new Promise((res, rej) => {
    const v = fatfs.createFileSystem(driver(), { umask: 0, uid: 0, gid: 0 }, (e) => (e ? rej(e) : res(v)));
});
let thrown = null, onThrow = null;
process.on('uncaughtException', (e) => { thrown = e; if (onThrow) onThrow(e); });
const call = (fn, ...a) => new Promise((res) => {
    try { fn(...a, (e, v) => res([e || null, v])); } catch (e) { thrown = e; if (onThrow) onThrow(e); }
});
const timeout = (s) => new Promise((res) => setTimeout(() => res('timeout'), s * 1000));
const code = (e) => (e && typeof e.code === 'string' ? 'E' + e.code : 'EIO(' + (e && e.message) + ')');
const norm = (p) => {       // '.' and '..' folded as a path walk does
    const c = [];
    for (const x of p.split('/')) { if (!x || x === '.') continue; if (x === '..') c.pop(); else c.push(x); }
    return '/' + c.join('/');
};

async function op(v, kind, p, a, file) {
    // -> [result, the call as made]
    if (kind === 'mkdir') { const [e] = await call(v.mkdir, p); return [e ? code(e) : 'ok', `fs.mkdir(${JSON.stringify(p)})`]; }
    if (kind === 'create' || kind === 'write') {
        const create = kind === 'create';
        const off = create ? 0 : a[0];
        const buf = file ? fs.readFileSync(path.join(path.dirname(opsFile), '..', file)) : Buffer.alloc(0);
        const what = `fs.open(${JSON.stringify(p)}, '${create ? 'wx' : 'r+'}')` + (buf.length ? `, fs.write(fd, ${buf.length} bytes at ${off})` : '') + ', fs.close(fd)';
        if (!create && !buf.length) return ['ok', 'nothing (a write of 0 bytes)'];
        let [e, fd] = await call(v.open, p, create ? 'wx' : 'r+');
        if (e) return [code(e), what];
        if (buf.length) [e] = await call(v.write, fd, buf, 0, buf.length, off);
        const [ec] = await call(v.close, fd);
        return [e || ec ? code(e || ec) : 'ok', what];
    }
    if (kind === 'truncate') { const [e] = await call(v.truncate, p, a[0]); return [e ? code(e) : 'ok', `fs.truncate(${JSON.stringify(p)}, ${a[0]})`]; }
    if (kind === 'chattr') {   // modmode 0111 (the default): r = no write bit, a/s/h = x bits
        const l = a[0], m = (l.includes('r') ? 0o444 : 0o666) | (l.includes('a') ? 0o100 : 0) | (l.includes('s') ? 0o10 : 0) | (l.includes('h') ? 0o1 : 0);
        const [e] = await call(v.chmod, p, m); return [e ? code(e) : 'ok', `fs.chmod(${JSON.stringify(p)}, 0${m.toString(8)})`];
    }
    if (kind === 'touch') {
        const [e] = await call(v.utimes, p, new Date(a[1] * 1000), new Date(a[0] * 1000));
        return [e ? code(e) : 'ok', `fs.utimes(${JSON.stringify(p)}, atime ${a[1]}, mtime ${a[0]})`];
    }
    return ['ENOSYS', `${kind} (not in the package: README "Coming Soon")`];
}

const answers = [];          // each op's answer, for the image checks
async function apply(ops) {
    const v = await mount();
    for (let i = 0; i < ops.length; i++) {
        const [kind, p, ...a] = ops[i];
        const file = a.pop();
        const n = i + 1;
        const threw = new Promise((res) => { onThrow = res; if (thrown) res(thrown); });
        const r = await Promise.race([op(v, kind, norm(p), a, file), threw.then(() => 'threw'), timeout(HANG_S)]);
        onThrow = null;
        if (r === 'threw') {
            out(`throw ${n} ${thrown && thrown.name}: ${thrown && thrown.message} (calling ${kind} ${JSON.stringify(norm(p))}; no callback)`);
            const probe = await Promise.race([call(v.stat, '/').then(() => 'answered'), timeout(PROBE_S)]);
            if (probe === 'timeout') out(`stuck ${PROBE_S} fs.stat('/') on the same instance gets no answer`);
            else out(`answered fs.stat('/') on the same instance answered after the throw`);
            for (let k = n; k <= ops.length; k++) out(`result ${k} NOTRUN (after the throw)`);
            return;
        }
        if (r === 'timeout') {
            out(`hang ${n} ${HANG_S} ${kind} ${JSON.stringify(norm(p))}`);
            for (let k = n; k <= ops.length; k++) out(`result ${k} NOTRUN (after the hang)`);
            return;
        }
        answers.push(r[0]);
        out(`result ${n} ${r[0]} ${r[1]}`);
    }
}

async function list() {
    const v = await mount();
    async function walk(dir, depth) {
        const [e, names] = await call(v.readdir, dir || '/');
        if (e) return out(`complaint readdir ${dir || '/'}: ${code(e)}`);
        for (const name of names) {
            const p = dir + '/' + name;
            const [es, st] = await call(v.stat, p);
            if (es && es.code === 'ISDIR') {     // fs.stat opens a directory as a file: EISDIR
                out(`d ${p}`);
                if (depth < 64) await walk(p, depth + 1);
            } else if (es) out(`complaint stat ${p}: ${code(es)}`);
            else {
                const [er, data] = await call(v.readFile, p);
                if (er) out(`complaint readFile ${p}: ${code(er)}`);
                out(`f ${p} ${er ? st.size : data.length}` + (er ? '' : ' ' + crypto.createHash('sha256').update(data).digest('hex')));
            }
        }
    }
    await walk('', 0);
}

// ---------------------------------------------------------------- the image itself
function checks() {
    const u8 = (o) => img[o], u16 = (o) => img.readUInt16LE(o), u32 = (o) => img.readUInt32LE(o);
    const bps = u16(11), spc = u8(13), rsvd = u16(14), nfats = u8(16), rootent = u16(17);
    const fatsz = u16(22) || u32(36), tot = u16(19) || u32(32);
    const rootsecs = Math.ceil(rootent * 32 / bps), data0 = rsvd + nfats * fatsz + rootsecs;
    const clusters = Math.floor((tot - data0) / spc);
    const bits = clusters < 4085 ? 12 : clusters < 65525 ? 16 : 32;
    const fat = (k, n) => {         // entry n of FAT copy k
        const b = (rsvd + k * fatsz) * bps;
        if (bits === 12) { const v = u16(b + n + (n >> 1)); return n & 1 ? v >> 4 : v & 0xfff; }
        return bits === 16 ? u16(b + 2 * n) : u32(b + 4 * n) & 0x0fffffff;
    };
    const hex = (x) => '0x' + x.toString(16).toUpperCase();
    out(`fact volume FAT${bits} by its cluster count (${clusters} clusters of ${spc * bps} bytes), ${nfats} FATs`);
    // the FAT copies
    if (nfats >= 2) {
        const diff = [];
        for (let n = 2; n < clusters + 2; n++) if (fat(0, n) !== fat(1, n)) diff.push(n);
        if (diff.length) {
            const free2 = diff.every((n) => fat(1, n) === 0);
            out(`symptom fats the ${nfats} FAT copies differ in ${diff.length} entries (clusters ${diff.slice(0, 6).join(', ')}${diff.length > 6 ? ', ...' : ''}): FAT 1 has ${diff.slice(0, 3).map((n) => hex(fat(0, n))).join(', ')}, FAT 2 ${diff.slice(0, 3).map((n) => hex(fat(1, n))).join(', ')}` + (free2 ? ' (only the first FAT was written)' : ''));
        } else out(`fact fats the ${nfats} FAT copies agree`);
    }
    const freeCount = () => { let f = 0; for (let n = 2; n < clusters + 2; n++) if (fat(0, n) === 0) f++; return f; };
    // FSInfo (FAT32)
    if (bits === 32) {
        const fsi = u16(48) * bps;
        if (u32(fsi) === 0x41615252 && u32(fsi + 484) === 0x61417272) {
            const said = u32(fsi + 488), have = freeCount();
            if (said !== 0xffffffff && said !== have) out(`symptom fsinfo FSInfo says ${said} free clusters, the FAT has ${have} free`);
            else out(`fact fsinfo FSInfo free count ${said === 0xffffffff ? 'unknown (0xFFFFFFFF)' : said}, the FAT has ${have} free`);
        }
    }
    // '..' of each directory in the root (FAT32: the root is a cluster chain)
    const chain = (c) => { const r = []; while (c >= 2 && c < clusters + 2 && r.length <= clusters) { r.push(c); c = fat(0, c); } return r; };
    const off = (c) => (data0 + (c - 2) * spc) * bps;
    if (bits === 32) {
        const root = u32(44);
        for (const c of chain(root)) for (let o = off(c); o < off(c) + spc * bps; o += 32) {
            if (img[o] === 0) break;
            const attr = img[o + 11];
            if (img[o] === 0xe5 || attr === 0x0f || !(attr & 0x10) || attr & 0x08 || img[o] === 0x2e) continue;
            const first = (u16(o + 20) << 16) | u16(o + 26), name = img.toString('latin1', o, o + 11).trimEnd();
            if (first < 2 || first >= clusters + 2) continue;
            const dd = off(first) + 32, dot2 = (u16(dd + 20) << 16) | u16(dd + 26);
            if (img.toString('latin1', dd, dd + 2) === '..' && dot2 !== 0)
                out(`symptom dotdot the directory ${name} (cluster ${first}) in the root has '..' = cluster ${dot2} (the root's cluster is ${root}; for a directory in the root the FAT specification stores 0)`);
            else out(`fact dotdot the directory ${name} in the root has '..' = ${dot2}`);
        }
        const last = chain(root).pop();
        if (last && fat(0, last) === 0x0ffffff8) out(`fact eoc the root's chain ends in 0x0FFFFFF8 (a valid end of chain: any value >= 0x0FFFFFF8)`);
    }
    // a FAT32 boot sector over fewer clusters: the entries read 32 bits wide, as Linux does
    if (u16(22) === 0 && bits !== 32) {
        const f32 = (n) => u32(rsvd * bps + 4 * n) & 0x0fffffff;
        const chain32 = (c) => { const r = []; while (c >= 2 && c < clusters + 2 && r.length <= clusters) { r.push(c); c = f32(c); } return r; };
        const free = [];
        for (const c of chain32(u32(44))) for (let o = off(c); o < off(c) + spc * bps; o += 32) {
            if (img[o] === 0) break;
            const attr = img[o + 11], first = (u16(o + 20) << 16) | u16(o + 26);
            if (img[o] === 0xe5 || attr === 0x0f || attr & 0x08 || img[o] === 0x2e || first < 2) continue;
            if (f32(first) === 0) free.push(`${img.toString('latin1', o, o + 11).trimEnd()} (cluster ${first})`);
        }
        out(`fact width a FAT32 boot sector over ${clusters} clusters: the package uses ${bits}-bit FAT entries; 32-bit FAT entry 1 is ${hex(f32(1))}`);
        if (free.length) out(`symptom width read as the FAT32 its boot sector declares, the first cluster of ${free.slice(0, 3).join(', ')} in the root is free: the package wrote ${bits}-bit FAT entries into the 32-bit FAT`);
    }
    // a fixed root whose last slots are long-name parts no 8.3 entry follows
    if (u16(22) !== 0 && rootent) {
        const base = (rsvd + nfats * fatsz) * bps;
        let n = 0;
        for (let i = rootent - 1; i >= 0; i--) {
            const o = base + 32 * i;
            if (img[o + 11] !== 0x0f || img[o] === 0 || img[o] === 0xe5) break;
            n++;
            if (img[o] & 0x40) {
                out(`symptom orphan the root's last ${n} of ${rootent} slots are long-name parts with no 8.3 entry after them: an entry that did not fit, written up to the root's end and left there`);
                break;
            }
        }
    }
    // ENOSPC answered while clusters are free (read with the package's own entry width)
    const nospc = answers.indexOf('ENOSPC');
    if (nospc >= 0) {
        const free = [];
        for (let n = 2; n < clusters + 2; n++) if (fat(0, n) === 0) free.push(n);
        if (free.length) out(`symptom free op ${nospc + 1} answered ENOSPC, yet ${free.length} clusters are free after the ops (clusters ${free.slice(0, 6).join(', ')}${free.length > 6 ? ', ...' : ''}; the volume's clusters are 2-${clusters + 1})`);
        else out(`fact free op ${nospc + 1} answered ENOSPC; no cluster is free after the ops`);
    }
    // files of the root whose size is more than their chain holds
    const rootOffs = [];
    if (u16(22) !== 0 && rootent) for (let i = 0; i < rootent; i++) rootOffs.push((rsvd + nfats * fatsz) * bps + 32 * i);
    else for (const c of chain(u32(44))) for (let o = off(c); o < off(c) + spc * bps; o += 32) rootOffs.push(o);
    for (const o of rootOffs) {
        if (img[o] === 0) break;
        const attr = img[o + 11];
        if (img[o] === 0xe5 || attr === 0x0f || attr & 0x18) continue;
        const first = (bits === 32 ? u16(o + 20) << 16 : 0) | u16(o + 26), size = u32(o + 28);
        const n = chain(first).length, name = img.toString('latin1', o, o + 11).trimEnd();
        if (size > n * spc * bps) out(`symptom size ${name} claims ${size} bytes, its chain holds ${n} clusters (${n * spc * bps} bytes)`);
    }
    // freed clusters marked prefix + 0 instead of 0
    const mark = { 12: 0xf00, 16: 0xff00, 32: 0x0fffff00 }[bits];
    const marked = [];
    for (let n = 2; n < clusters + 2; n++) if (fat(0, n) === mark && mark >= clusters + 2) marked.push(n);
    const into = [];        // live entries still linking to a freed one
    for (let n = 2; n < clusters + 2; n++) if (marked.includes(fat(0, n)) && !marked.includes(n)) into.push(`${n} -> ${fat(0, n)}`);
    if (marked.length) out(`symptom freed ${marked.length} FAT entries hold ${hex(mark)}, a cluster number past the volume (clusters ${marked.slice(0, 6).join(', ')}${marked.length > 6 ? ', ...' : ''}): a freed cluster's entry must be 0` + (into.length ? `; the kept chain still links into them (${into.slice(0, 3).join(', ')})` : ''));
}

(async () => {
    await apply(JSON.parse(fs.readFileSync(opsFile, 'utf8')));
    fs.writeFileSync(image, img);
    // a name the package's longname() refuses throws in the listing too: bounded
    const l = await Promise.race([list().catch((e) => out(`complaint listing: ${e && e.message}`)), timeout(HANG_S)]);
    if (l === 'timeout') out(`complaint listing: no answer within ${HANG_S} s` + (thrown ? ` (the package threw: ${thrown.message})` : ''));
    checks();
    process.exit(0);     // the stuck instance and the package's 500-ms close timers would keep node alive
})().catch((e) => { out(`error ${e && e.stack}`); process.exit(3); });
