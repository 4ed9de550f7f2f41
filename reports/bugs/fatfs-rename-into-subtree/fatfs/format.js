const rd = require('fs').readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean);
for (const line of rd) {
    const a = JSON.parse(line);
    if (a.error) { console.log('error ' + a.error); continue; }
    if (a.results) a.results.forEach((r, i) => console.log('result ' + (i + 1) + ' ' + r + ' ' + ((a.fr && a.fr[i]) || '-')));
    if (a.entries) for (const e of a.entries)
        console.log(e.type === 'dir' ? 'd ' + e.path : 'f ' + e.path + ' ' + e.size + (e.sha256 ? ' ' + e.sha256 : ''));
    if (a.complaints) for (const c of a.complaints) console.log('complaint ' + c);
}
