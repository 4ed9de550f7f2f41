"""glibc's C.UTF-8 character functions, as mtools calls them on a new name.

mtools 4.0.32 classifies and upper-cases the characters of a name with
iswlower/iswupper/towupper and converts the result with iconv to
CP437//TRANSLIT into a buffer of one byte per character. Python's own case
tests differ from glibc's on titlecase digraphs ('ǅ' is neither lower nor
upper for Python, both for glibc, whose tables call a character lower when
it has an upper-case mapping), and the iconv program cannot show what a
bounded buffer keeps (glibc writes the first byte of a transliteration
that does not fit, 'Ǆ' -> 'D', where the program, with room, gives '?').
So the model asks glibc itself, in-process through ctypes, under a
per-thread C.UTF-8 locale (uselocale: the harness's own locale is left
alone). Each function returns None when glibc cannot be reached here; the
callers then fall back on Python's rules.
"""
import ctypes
import ctypes.util
import threading

_LC_CTYPE_MASK = 1 << 0          # glibc: 1 << __LC_CTYPE, __LC_CTYPE == 0
_lock = threading.Lock()
_state = {}


def _libc():
    """(libc, C.UTF-8 locale handle) or None, loaded once."""
    with _lock:
        if "libc" not in _state:
            _state["libc"] = None
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
                libc.newlocale.restype = ctypes.c_void_p
                libc.newlocale.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p]
                libc.uselocale.restype = ctypes.c_void_p
                libc.uselocale.argtypes = [ctypes.c_void_p]
                libc.iconv_open.restype = ctypes.c_void_p
                libc.iconv_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
                libc.iconv.restype = ctypes.c_size_t
                libc.iconv.argtypes = [ctypes.c_void_p] + [ctypes.c_void_p] * 4
                libc.iconv_close.argtypes = [ctypes.c_void_p]
                loc = libc.newlocale(_LC_CTYPE_MASK, b"C.UTF-8", None)
                if loc:
                    _state["libc"] = (libc, loc)
            except (OSError, AttributeError):
                pass
        return _state["libc"]


class _InLocale:
    """C.UTF-8 for this thread while inside; the previous locale after."""

    def __init__(self, libc, loc):
        self.libc, self.loc, self.old = libc, loc, None

    def __enter__(self):
        self.old = self.libc.uselocale(self.loc)
        return self.libc

    def __exit__(self, *exc):
        self.libc.uselocale(self.old)


def case_of(c):
    """(lower, upper, towupper(c)) as glibc's C.UTF-8 sees character c, or
    None without glibc."""
    got = _libc()
    if got is None:
        return None
    with _InLocale(*got) as libc:
        w = ord(c)
        return bool(libc.iswlower(w)), bool(libc.iswupper(w)), chr(libc.towupper(w))


def to_cp437_translit(text, room):
    """The bytes glibc's iconv to CP437//TRANSLIT leaves in a buffer of
    room bytes for text (UTF-32 in, as mtools' wide characters): what fits,
    including the written part of a transliteration cut short; None
    without glibc or without the converter."""
    got = _libc()
    if got is None:
        return None
    with _InLocale(*got) as libc:
        cd = libc.iconv_open(b"CP437//TRANSLIT", b"UTF-32LE")
        if cd in (None, ctypes.c_void_p(-1).value):
            return None
        try:
            src = text.encode("utf-32-le")
            inbuf = ctypes.create_string_buffer(src, len(src))
            outbuf = ctypes.create_string_buffer(b"\0" * (room + 1), room + 1)
            inp, outp = ctypes.c_void_p(ctypes.addressof(inbuf)), ctypes.c_void_p(ctypes.addressof(outbuf))
            inleft, outleft = ctypes.c_size_t(len(src)), ctypes.c_size_t(room)
            libc.iconv(cd, ctypes.byref(inp), ctypes.byref(inleft), ctypes.byref(outp), ctypes.byref(outleft))
            return outbuf.raw[:room].rstrip(b"\0")     # what was never written
        finally:
            libc.iconv_close(cd)
