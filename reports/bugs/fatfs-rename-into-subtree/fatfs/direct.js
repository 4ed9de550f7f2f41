'use strict';
// FatFs's own API, without a POSIX layer: each op of ops.json is one FatFs
// call (or f_open + f_write + f_close), its FRESULT printed as
// "result N FR_... CALL". Usage: node direct.js IMAGE OPS.json
// The image is read into memory, FatFs works on it, and it is written back
// after f_mount(NULL) at the end.
const fs = require('fs');
const path = require('path');
console.log = console.error;            // stdout: the results only
const FRNAMES = ['FR_OK', 'FR_DISK_ERR', 'FR_INT_ERR', 'FR_NOT_READY', 'FR_NO_FILE', 'FR_NO_PATH',
    'FR_INVALID_NAME', 'FR_DENIED', 'FR_EXIST', 'FR_INVALID_OBJECT', 'FR_WRITE_PROTECTED',
    'FR_INVALID_DRIVE', 'FR_NOT_ENABLED', 'FR_NO_FILESYSTEM', 'FR_MKFS_ABORTED', 'FR_TIMEOUT',
    'FR_LOCKED', 'FR_NOT_ENOUGH_CORE', 'FR_TOO_MANY_OPEN_FILES', 'FR_INVALID_PARAMETER'];

async function main() {
    const [image, opsFile] = process.argv.slice(2);
    const F = await import(path.join(__dirname, 'node_modules', 'js-fatfs', 'dist', 'fatfs.js'));
    const img = fs.readFileSync(image);
    const bps = img.readUInt16LE(11);
    const ss = [512, 1024, 2048, 4096].includes(bps) ? bps : 512;
    const disk = {
        initialize: () => 0,
        status: () => 0,
        read(m, pdrv, buff, sector, count) {
            const a = sector * ss, n = count * ss;
            if (a + n > img.length) return F.RES_ERROR;
            m.HEAPU8.set(img.subarray(a, a + n), buff);
            return F.RES_OK;
        },
        write(m, pdrv, buff, sector, count) {
            const a = sector * ss, n = count * ss;
            if (a + n > img.length) return F.RES_ERROR;
            img.set(m.HEAPU8.subarray(buff, buff + n), a);
            return F.RES_OK;
        },
        ioctl(m, pdrv, cmd, buff) {
            if (cmd === F.CTRL_SYNC) return F.RES_OK;
            if (cmd === F.GET_SECTOR_COUNT) { m.setValue(buff, Math.floor(img.length / ss), 'i32'); return F.RES_OK; }
            if (cmd === F.GET_SECTOR_SIZE) { m.setValue(buff, ss, 'i16'); return F.RES_OK; }
            if (cmd === F.GET_BLOCK_SIZE) { m.setValue(buff, 1, 'i32'); return F.RES_OK; }
            return F.RES_PARERR;
        },
    };
    const ff = await F.create({ diskio: disk, codepage: 437 });
    const fatfs = ff.malloc(F.sizeof_FATFS), fil = ff.malloc(F.sizeof_FIL), nw = ff.malloc(8);
    let r = ff.f_mount(fatfs, '', 1);
    if (r !== F.FR_OK) { process.stdout.write('error f_mount ' + FRNAMES[r] + '\n'); process.exit(1); }
    // content byte i of a create or write: (SEED + 31*i) mod 256
    const put = (size, seed) => {
        const buf = ff.malloc(Math.max(size, 1));
        for (let i = 0; i < size; i++) ff.HEAPU8[buf + i] = (seed + 31 * i) % 256;
        const w = ff.f_write(fil, buf, size, nw);
        ff.free(buf);
        return w;
    };
    const ops = JSON.parse(fs.readFileSync(opsFile, 'utf8'));
    ops.forEach(([kind, ...a], i) => {
        let call;
        if (kind === 'mkdir') { call = `f_mkdir("${a[0]}")`; r = ff.f_mkdir(a[0]); }
        else if (kind === 'rename') { call = `f_rename("${a[0]}", "${a[1]}")`; r = ff.f_rename(a[0], a[1]); }
        else if (kind === 'unlink' || kind === 'rmdir') { call = `f_unlink("${a[0]}")`; r = ff.f_unlink(a[0]); }
        else if (kind === 'create' || kind === 'write') {
            const create = kind === 'create';
            call = `f_open("${a[0]}", ${create ? 'FA_WRITE|FA_CREATE_NEW' : 'FA_WRITE'})+f_write+f_close`;
            r = ff.f_open(fil, a[0], create ? F.FA_WRITE | F.FA_CREATE_NEW : F.FA_WRITE);
            if (r === F.FR_OK) {
                if (!create) r = ff.f_lseek(fil, a[1]);
                if (r === F.FR_OK) r = create ? put(a[1], a[2]) : put(a[2], a[3]);
                const c = ff.f_close(fil);
                if (r === F.FR_OK) r = c;
            }
        } else { call = kind; r = -1; }
        process.stdout.write(`result ${i + 1} ${FRNAMES[r] || 'FR_' + r} ${call}\n`);
    });
    ff.f_mount(0, '', 0);
    fs.writeFileSync(image, img);
}
main().catch((e) => { process.stdout.write('error ' + e.message + '\n'); process.exit(3); });
