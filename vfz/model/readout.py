"""What the model's tree shows: its canonical listing, its aliases, and counts of its entries by kind.

Mixed into vfz.model.tree.Model (self.root, self.names): read-only walks of the expected tree
that the checker, the dosfsck oracle's expectations and the studies ask for.
"""
from vfz import listing
from vfz.model.names import _alias_has_del, alias_has_del, needs_lfn


class ReadoutOps:
    def entries(self):
        out = []

        def rec(node, prefix):
            for k in node.kids.values():
                p = prefix + "/" + k.name
                # the meta keys (listing.META_KEYS): the attributes always,
                # a time only where the model knows it (not the writer's clock)
                meta = {"attrs": listing.attr_letters(k.attr)}
                meta.update((t, getattr(k, t)) for t in ("mtime", "atime") if getattr(k, t) is not None)
                if k.is_dir:
                    out.append(listing.entry(p, "dir", **meta))
                    rec(k, p)
                else:
                    out.append(listing.entry(p, "file", bytes(k.data), **meta))
        rec(self.root, "")
        return sorted(out, key=lambda e: e["path"])

    def aliases(self):
        """{path: alias} of every entry: the 8.3 alias as Linux shows it, a
        HexAlias, or None (a bare 8.3 entry; every entry in nodual mode)."""
        out = {}
        stack = [(self.root, "")]
        while stack:
            d, path = stack.pop()
            for k in d.kids.values():
                out[path + "/" + k.name] = k.alias
                if k.is_dir:
                    stack.append((k, path + "/" + k.name))
        return out

    def dir_stats(self, rule="win95"):
        """[(path, entries with LFN slots, bare 8.3 entries, is_root)]."""
        out = []

        def rec(node, path):
            lfn = sum(needs_lfn(k.name, rule) for k in node.kids.values())
            out.append((path or "/", lfn, len(node.kids) - lfn, node is self.root))
            for k in node.kids.values():
                if k.is_dir:
                    rec(k, path + "/" + k.name)
        rec(self.root, "")
        return out

    def del_alias_count(self):
        """Entries whose dual alias holds 0x7F (fsck.fat calls it a bad name)."""
        n = 0
        stack = [self.root]
        while stack:
            d = stack.pop()
            for k in d.kids.values():
                n += _alias_has_del(k.alias) if self.names == "dual" else alias_has_del(k.name)
                if k.is_dir:
                    stack.append(k)
        return n

    def lfn_count(self, rule="win95"):
        """Entries that get LFN slots (and so a dummy in nodual modes)."""
        n = 0
        stack = [self.root]
        while stack:
            d = stack.pop()
            for k in d.kids.values():
                n += needs_lfn(k.name, rule)
                if k.is_dir:
                    stack.append(k)
        return n
