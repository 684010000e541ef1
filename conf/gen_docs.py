#!/usr/bin/python3
"""gen_docs.py: man pages and the configuration summary from Markdown.

Usage:
  gen_docs.py man SRC OUT SECTION VERSION        a man page (roff) from SRC
  gen_docs.py keys SRC                           "[group] key" per key of SRC
  gen_docs.py summary SRC OUT                    the summary table (Markdown)
  gen_docs.py check-summary SRC MD               MD holds that table, as is
  gen_docs.py write-summary SRC MD               put it into MD

SRC is Markdown of a small, fixed shape (conf/reference.md, the
configuration reference written once; daemon/migrate/hbase-salt-migrate.md):
"# name", one line saying what it is (the man page's NAME), then
"## Section" and "### Subsection" headings, paragraphs, "- " lists,
``` blocks and | tables |.  In the reference, a "## [group]" heading
opens a group and each "### `key`" under it one key, whose first two
lines are "Default: ..." and "On reload: ...".  meson runs "man" at
build time (the pages install from the build tree) and the build suite
runs "check-summary", so the three cannot drift apart.
"""
import re
import sys

BEGIN = ('<!-- BEGIN configuration summary: generated from conf/reference.md '
         'by conf/gen_docs.py write-summary; do not edit -->')
END = '<!-- END configuration summary -->'


def strip_comments(text):
    return re.sub(r'<!--.*?-->\n?', '', text, flags=re.S)


def parse_blocks(text):
    """[(kind, payload)]: ('h1'|'h2'|'h3', title), ('p', text),
    ('li', (mark, level, text)), ('code', lines), ('table', rows)."""
    lines = strip_comments(text).split('\n')
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        m = re.match(r'^(#{1,3}) (.*)$', line)
        if m:
            out.append(('h%d' % len(m.group(1)), m.group(2).strip()))
            i += 1
            continue
        if line.startswith('```'):
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith('```'):
                body.append(lines[i])
                i += 1
            out.append(('code', body))
            i += 1
            continue
        if line.startswith('|'):
            rows = []
            while i < len(lines) and lines[i].startswith('|'):
                cells = [c.strip() for c in
                         re.split(r'(?<!\\)\|', lines[i].strip()[1:-1])]
                if not all(re.match(r'^:?-+:?$', c) for c in cells):
                    rows.append(cells)
                i += 1
            out.append(('table', rows))
            continue
        m = re.match(r'^(- |\d+\. )(.*)$', line)
        if m:
            # an item, its continuation lines, and items nested in it
            items = [(m.group(1).strip(), 0, [m.group(2)])]
            i += 1
            while i < len(lines) and lines[i].startswith('  ') and \
                    lines[i].strip():
                sub = re.match(r'^ +(- |\d+\. )(.*)$', lines[i])
                if sub:
                    items.append((sub.group(1).strip(), 1, [sub.group(2)]))
                else:
                    items[-1][2].append(lines[i].strip())
                i += 1
            for mark, level, text in items:
                out.append(('li', (mark, level, ' '.join(text))))
            continue
        para = [line.strip()]
        i += 1
        while i < len(lines) and lines[i].strip() and \
                not re.match(r'^(#{1,3} |```|\||- |\d+\. )', lines[i]):
            para.append(lines[i].strip())
            i += 1
        out.append(('p', ' '.join(para)))
    return out


def reference_keys(blocks):
    """[(group, [keys], default, reload, [body blocks])] of a reference."""
    keys = []
    group = entry = None
    for kind, payload in blocks:
        if kind == 'h2':
            m = re.match(r'^\[([a-z0-9]+)(:NAME)?\]$', payload)
            group = ('[%s%s]' % (m.group(1), m.group(2) or '')) if m else None
            entry = None
        elif kind == 'h3' and group is not None:
            names = re.findall(r'`([a-z0-9_]+)`', payload)
            entry = [group, names, None, None, []]
            keys.append(entry)
        elif entry is not None and kind != 'h1':
            if kind == 'p' and entry[2] is None:
                m = re.match(r'^Default: (.*?)\.? On reload: (.*?)\.?$',
                             payload)
                if not m:
                    raise SystemExit('%s %s: "Default: ... On reload: ..." '
                                     'must come first' % (entry[0],
                                                          entry[1]))
                entry[2], entry[3] = m.group(1), m.group(2)
            else:
                entry[4].append((kind, payload))
    for group, names, default, reload_, body in keys:
        if default is None or not body:
            raise SystemExit('%s %s: no Default/On reload line or no text'
                             % (group, ', '.join(names)))
    return keys


# --- roff ---------------------------------------------------------------

def roff_text(s, code=False):
    s = s.replace('\\', '\\e')
    if code:
        return s
    return s


def roff_inline(s):
    """Markdown inline markup to roff font changes."""
    parts = re.split(r'(`[^`]*`)', s)
    out = []
    for part in parts:
        if part.startswith('`') and part.endswith('`') and len(part) >= 2:
            out.append('\\fB' + roff_text(part[1:-1], True) + '\\fR')
            continue
        t = roff_text(part)
        # a link within the sources reads as its text (SEE ALSO names the
        # documents); one to the web keeps its address
        t = re.sub(r'\[([^\]]+)\]\((?!https?:)[^)]*\)', r'\1', t)
        t = re.sub(r'\[([^\]]+)\]\(([^)]*)\)', r'\1 (\2)', t)
        t = re.sub(r'\*\*([^*]+)\*\*', r'\\fB\1\\fR', t)
        t = re.sub(r'(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])', r'\\fI\1\\fR', t)
        out.append(t)
    return ''.join(out)


def roff_line(s):
    """One output line: a leading . or ' would read as a request."""
    s = roff_inline(s)
    if s.startswith(('.', "'")):
        s = '\\&' + s
    return s


def roff_wrap(text):
    """A paragraph as lines of at most ~78 characters, a sentence ending
    a line where one does (roff puts two spaces after it)."""
    words = roff_line(text).split(' ')
    lines, cur = [], ''
    for w in words:
        if cur and len(cur) + 1 + len(w) > 78:
            lines.append(cur)
            cur = w
        else:
            cur = (cur + ' ' + w) if cur else w
    if cur:
        lines.append(cur)
    return '\n'.join('\\&' + l if l.startswith(('.', "'")) else l
                     for l in lines)


def roff_block(kind, payload, indented):
    if kind == 'p':
        return ('.IP\n' if indented else '.PP\n') + roff_wrap(payload)
    if kind == 'li':
        mark, level, text = payload
        tag = '\\(bu' if mark == '-' else mark
        nest = int(indented) + level
        width = 2 if mark == '-' else len(mark) + 1
        return '.RS\n' * nest + '.IP %s %d\n' % (tag, width) + \
            roff_wrap(text) + '\n.RE' * nest
    if kind == 'code':
        body = '\n'.join('\\&' + roff_text(l) for l in payload)
        return '.PP\n.RS 4\n.nf\n' + body + '\n.fi\n.RE'
    if kind == 'table':
        out = []
        for n, row in enumerate(payload):
            font = '\\fI' if n == 0 else ''
            out.append('.TP\n' + font + roff_line(row[0]) +
                       ('\\fR' if font else '') + '\n' +
                       roff_wrap('; '.join(c for c in row[1:] if c)))
        return '.PP\n' + '\n'.join(out)
    raise SystemExit('unknown block %s' % kind)


def to_man(text, section, version):
    blocks = parse_blocks(text)
    if not blocks or blocks[0][0] != 'h1' or blocks[1][0] != 'p':
        raise SystemExit('must start "# name" and a line saying what it is')
    title, what = blocks[0][1], blocks[1][1]
    out = ['.\\" %s.%s: generated by conf/gen_docs.py from Markdown; '
           'edit the source, not this file.' % (title, section),
           '.TH %s %s "%s" "hbase-salt-proxy %s" "%s"'
           % (title.upper(), section, '2026', version, 'File Formats' if section == '5'
              else 'System Administration'),
           '.SH NAME', '%s \\- %s' % (title.replace('-', '\\-'),
                                      roff_inline(what))]
    keyed = {}
    for group, names, default, reload_, body in (
            reference_keys(blocks) if any(
                k == 'h2' and p.startswith('[') for k, p in blocks) else []):
        keyed[(group, tuple(names))] = (default, reload_, body)
    group = None
    in_key = False
    skip = False
    for kind, payload in blocks[2:]:
        if kind == 'h2':
            m = re.match(r'^\[([a-z0-9]+)(:NAME)?\]$', payload)
            group = ('[%s%s]' % (m.group(1), m.group(2) or '')) if m else None
            out.append('.SH "%s"' % (payload if group else payload.upper()))
            in_key = skip = False
            continue
        if kind == 'h3':
            names = tuple(re.findall(r'`([a-z0-9_]+)`', payload))
            if group is not None and (group, names) in keyed:
                default, reload_, body = keyed[(group, names)]
                out.append('.TP\n.B %s\n.br' % ', '.join(names))
                out.append(roff_wrap('Default: %s.  On reload: %s.'
                                     % (default, reload_)))
                for k, p in body:
                    out.append(roff_block(k, p, True))
                in_key = skip = True
                continue
            out.append('.SS "%s"' % roff_inline(payload).replace('"', ''))
            in_key = skip = False
            continue
        if skip:
            continue
        out.append(roff_block(kind, payload, in_key))
    return '\n'.join(out) + '\n'


# --- the summary table ----------------------------------------------------

def first_sentence(body):
    for kind, payload in body:
        if kind == 'p':
            m = re.match(r'^(.*?[.;])( |$)', payload)
            return (m.group(1) if m else payload).rstrip('.;')
    return ''


def summary(text):
    rows = ['| group | key | default | on reload | meaning |',
            '|---|---|---|---|---|']
    last = None
    for group, names, default, reload_, body in \
            reference_keys(parse_blocks(text)):
        g = '`%s`' % group if group != last else ''
        last = group
        rows.append('| %s | %s | %s | %s | %s |'
                    % (g, ', '.join('`%s`' % n for n in names), default,
                       reload_, first_sentence(body).replace('|', '\\|')))
    return '\n'.join([BEGIN, '', 'Every key, its default, what a reload does '
                      'with it, and the first sentence of its meaning '
                      '(all of it: `man 5 hbase-salt-proxy.conf`, or '
                      '[conf/reference.md](reference.md)):', ''] + rows +
                     ['', END])


def with_summary(md_text, table):
    if BEGIN not in md_text or END not in md_text:
        raise SystemExit('no "%s" ... "%s" block' % (BEGIN, END))
    a = md_text.index(BEGIN)
    b = md_text.index(END) + len(END)
    return md_text[:a] + table + md_text[b:]


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    cmd, src = argv[1], argv[2]
    text = open(src).read()
    if cmd == 'man' and len(argv) == 6:
        with open(argv[3], 'w') as f:
            f.write(to_man(text, argv[4], argv[5]))
        return 0
    if cmd == 'keys' and len(argv) == 3:
        for group, names, _, _, _ in reference_keys(parse_blocks(text)):
            for n in names:
                print('%s %s' % (group, n))
        return 0
    if cmd == 'summary' and len(argv) == 4:
        with open(argv[3], 'w') as f:
            f.write(summary(text) + '\n')
        return 0
    if cmd in ('check-summary', 'write-summary') and len(argv) == 4:
        md = open(argv[3]).read()
        want = with_summary(md, summary(text))
        if cmd == 'write-summary':
            with open(argv[3], 'w') as f:
                f.write(want)
            return 0
        if want != md:
            print('%s: the configuration summary is not what %s says; run\n'
                  '  conf/gen_docs.py write-summary %s %s'
                  % (argv[3], src, src, argv[3]))
            return 1
        print('%s: configuration summary up to date' % argv[3])
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
