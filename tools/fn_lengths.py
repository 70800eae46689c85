#!/usr/bin/env python3
"""Lines per function (signature to closing brace) in Rust files, longest first.

    TOP=15 python3 tools/fn_lengths.py state-derive/src/*.rs state-derive/src/expand/*.rs

Strings, chars and comments are blanked before braces are counted."""
import re, sys

def blank(src):
    # blank out comments, string and char literals (keeps line structure)
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i); j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif src.startswith('/*', i):
            j = src.find('*/', i) + 2
            out.append(re.sub(r'[^\n]', ' ', src[i:j])); i = j
        elif c == 'r' and re.match(r'r#*"', src[i:]) and (i == 0 or not (src[i-1].isalnum() or src[i-1] == '_')):
            m = re.match(r'r(#*)"', src[i:]); end = '"' + m.group(1)
            j = src.find(end, i + len(m.group(0))) + len(end)
            out.append(re.sub(r'[^\n]', ' ', src[i:j])); i = j
        elif c == '"':
            j = i + 1
            while src[j] != '"':
                j += 2 if src[j] == '\\' else 1
            out.append(re.sub(r'[^\n]', ' ', src[i:j+1])); i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", src[i:i+4] + "    "):
            m = re.match(r"'(\\[^']*|[^\\'])'", src[i:])
            out.append(' ' * len(m.group(0))); i += len(m.group(0))
        else:
            out.append(c); i += 1
    return ''.join(out)

rows = []
for path in sys.argv[1:]:
    text = blank(open(path).read())
    lines = text.split('\n')
    for m in re.finditer(r'\bfn\s+([A-Za-z_][A-Za-z0-9_]*)', text):
        start = text.count('\n', 0, m.start())
        # the body: first '{' after the signature (skip `;` declarations)
        k = m.end(); depth = 0
        while k < len(text) and text[k] not in '{;':
            k += 1
        if k >= len(text) or text[k] == ';':
            continue
        j = k
        while True:
            if text[j] == '{': depth += 1
            elif text[j] == '}':
                depth -= 1
                if depth == 0: break
            j += 1
        end = text.count('\n', 0, j)
        rows.append((end - start + 1, path, start + 1, m.group(1)))
rows.sort(reverse=True)
for n, path, line, name in rows[:int(__import__('os').environ.get('TOP', '15'))]:
    print(f"{n:5}  {path}:{line}  {name}")
