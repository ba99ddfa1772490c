"""The links check for RTF: a tokenizer over the whole control-word stream.

An RTF field's instruction is the text of its ``\\fldinst`` group, however long, spread over
nested groups, hex (``\\'49``) and Unicode (``\\u73?``) escapes. Reading a window after
``\\fldinst`` let padding of spaces or line breaks carry an ``INCLUDEPICTURE`` past the window;
here every token of the file is read, groups are tracked on a stack, and a field's instruction
is the text of its whole group, checked when the group closes (or the file ends). Ignorable
destinations inside it (``{\\*\\bkmkstart x}``) are not instruction text. Refused besides: a
linked OLE object (``\\objlink``, ``\\objautlink``) and a linked picture (a shape property
``pibName``).
"""

from __future__ import annotations

import re

from extract.formats.refusals import check_field, refuse

__all__ = ["check_rtf"]

_TOKEN = re.compile(
    rb"\\([a-zA-Z]{1,32})(-?\d{1,10})? ?"  # a control word, its parameter, its delimiter
    rb"|\\'([0-9a-fA-F]{2})"  # a hex escape
    rb"|\\(.)"  # a control symbol (\*, \\, \{, \}, \~ ...)
    rb"|([{}])"  # a group
    rb"|[\r\n]+"  # line breaks: not text
    rb"|([^\\{}\r\n]+)",  # text
    re.DOTALL)
_LINKED_OBJECTS = frozenset({b"objlink", b"objautlink"})


class _Group:
    __slots__ = ("field", "ignorable", "shape_name", "skip_fallback", "fallback")

    def __init__(self, parent: _Group | None):
        self.field: list[str] | None = parent.field if parent else None
        self.ignorable = parent.ignorable if parent else False
        self.shape_name = False
        self.fallback = parent.fallback if parent else 1  # \ucN: characters after a \uN
        self.skip_fallback = 0


def check_rtf(data: bytes, where: str = "an RTF field") -> None:
    """Raise ``LinksOutside`` when the RTF in ``data`` includes or links content from outside."""
    stack: list[_Group] = [_Group(None)]
    pending_star = False
    for token in _TOKEN.finditer(data):
        word, parameter, hex_byte, symbol, brace, text = token.groups()
        group = stack[-1]
        if brace == b"{":
            stack.append(_Group(group))
            continue
        if brace == b"}":
            _close(stack, where)
            continue
        if word is not None:
            if pending_star:
                group.ignorable = group.ignorable or word != b"fldinst"
                pending_star = False
            if word in _LINKED_OBJECTS:
                raise refuse(f"a linked OLE object (\\{word.decode()})")
            if word == b"fldinst":
                group.field, group.ignorable = [], False
            elif word == b"sn":
                group.shape_name = True
            elif word == b"uc" and parameter is not None:
                group.fallback = max(0, int(parameter))
            elif word == b"u" and parameter is not None:
                _text(group, chr(int(parameter) % 65536))
                group.skip_fallback = group.fallback
            elif word in (b"tab", b"emspace", b"enspace"):
                _text(group, " ")
            continue
        if symbol is not None:
            if symbol == b"*":
                pending_star = True
            elif symbol in (b"\\", b"{", b"}"):
                _text(group, symbol.decode("latin-1"))
            elif symbol in (b"~", b"_", b"-"):
                _text(group, " " if symbol == b"~" else "-")
            continue
        if hex_byte is not None:
            if group.skip_fallback:
                group.skip_fallback -= 1
                continue
            _text(group, chr(int(hex_byte, 16)))
            continue
        if text is not None:
            chars = text.decode("latin-1")
            if group.skip_fallback:
                dropped = min(group.skip_fallback, len(chars))
                chars, group.skip_fallback = chars[dropped:], group.skip_fallback - dropped
            if group.shape_name and chars.strip().lower() == "pibname":
                raise refuse("a linked picture (the shape property pibName)")
            _text(group, chars)
    while len(stack) > 1:  # groups left open at the end of the file still count
        _close(stack, where)
    if stack[0].field:
        check_field("".join(stack[0].field), where)


def _text(group: _Group, chars: str) -> None:
    if group.field is not None and not group.ignorable:
        group.field.append(chars)


def _close(stack: list[_Group], where: str) -> None:
    if len(stack) == 1:
        return  # an unbalanced close: LibreOffice ignores it, so does the tokenizer
    closing = stack.pop()
    parent = stack[-1]
    if closing.field is not None and closing.field is not parent.field:
        check_field("".join(closing.field), where)
