"""JSON for a hook process: the interpreter's own C codec (``_json``) without the
:mod:`json` package around it.

``import json`` brings ``re`` (the decoder's and the encoder's patterns), and with it
``enum``, ``functools`` and ``collections``: more CPU than the rest of a hook's own
work. The codec is the one ``json.dumps`` and ``json.loads`` call themselves, set up
as they set it up, so the output is ``json.dumps(value, separators=(",", ":"))``'s
(ASCII) and the values are ``json.loads``'. Where ``_json`` is missing (another
interpreter), :mod:`json` does the work.
"""

try:
    from _json import encode_basestring_ascii, make_encoder, make_scanner
except ImportError:  # pragma: no cover - CPython has it
    make_encoder = make_scanner = encode_basestring_ascii = None

#: JSON's whitespace (``json.decoder.WHITESPACE``'s characters).
WHITESPACE = " \t\n\r"
UTF8_BOM = b"\xef\xbb\xbf"


class _Decoder:
    """What ``_json.make_scanner`` reads of a decoder: ``json.JSONDecoder()``'s defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"),
                      "NaN": float("nan")}.__getitem__  # fmt: skip


_scan = make_scanner(_Decoder()) if make_scanner is not None else None


def loads(data: bytes | str) -> object:
    """``json.loads(data)``: a ``ValueError`` for anything not one JSON value (``json``'s
    own, raised by ``json``: ``_json`` cannot raise it before ``json.decoder`` is
    imported, and on Python 3.11 fails with a ``SystemError`` instead)."""
    if _scan is None or (isinstance(data, bytes) and b"\x00" in data[:4]):
        return _json_loads(data)  # UTF-16 or -32 bytes (json.detect_encoding's cue)
    text = data
    if isinstance(text, bytes):
        text = text.decode("utf-8-sig" if text.startswith(UTF8_BOM) else "utf-8", "surrogatepass")
    start = len(text) - len(text.lstrip(WHITESPACE))
    try:
        value, end = _scan(text, start)
    except (StopIteration, SystemError):
        return _json_loads(data)
    if text[end:].strip(WHITESPACE):
        return _json_loads(data)
    return value


def _json_loads(data: bytes | str) -> object:
    import json

    return json.loads(data)


def dumps(value: object) -> bytes:
    """Compact ASCII JSON: ``json.dumps(value, separators=(",", ":")).encode()``."""
    if make_encoder is None:
        import json

        return json.dumps(value, separators=(",", ":")).encode()
    # A new encoder each call: its circular-reference markers are left behind by a failure.
    encode = make_encoder({}, _not_serializable, encode_basestring_ascii, None, ":", ",",
                          False, False, True)  # fmt: skip
    return "".join(encode(value, 0)).encode()


def _not_serializable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
