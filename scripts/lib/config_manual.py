#!/usr/bin/python3
"""Writes the caretaker.toml(5) man page from docs/configuration.md.

docs/configuration.md is the one source of the configuration reference: its
tables give every key's type, default, bounds and effect, and a test holds them
to the keys the loader reads. This turns that page into man(7) source, so the
manual and the page cannot say different things.

    config_manual.py docs/configuration.md VERSION YYYY-MM-DD > caretaker.toml.5
"""

import re
import sys
import textwrap


def inline(text):
    """Markdown inline text to roff: `code` in bold, links as their text, roff escapes."""
    text = text.replace("\\", "\\e")
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\\fB\1\\fR", text)
    text = re.sub(r"`([^`]+)`", r"\\fB\1\\fR", text)
    text = text.replace("\u2013", "\\(en").replace("\u2014", "\\(em").replace("\u2026", "...")
    return text


def lines_of(text):
    """Text lines of at most 80 bytes; a leading dot or quote would be read as a request."""
    wrapped = textwrap.wrap(text, width=78, break_long_words=False, break_on_hyphens=False)
    return ["\\&" + part if part.startswith((".", "'")) else part for part in wrapped]


def logical_lines(lines):
    """Joins a paragraph's or a list item's continuation lines, so inline code never spans two."""
    joined = []
    for text in lines:
        if text.startswith("  ") and joined and joined[-1].startswith("- "):
            joined[-1] += " " + text.strip()
        elif text.strip() and joined and joined[-1].strip() and not text.startswith(("#", "|", "- ")) \
                and not joined[-1].startswith(("#", "|")):
            joined[-1] += " " + text.strip()
        else:
            joined.append(text)
    return joined


def cells(row):
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def main():
    source, version, date = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(source, encoding="utf-8") as handle:
        lines = logical_lines(handle.read().splitlines())

    out = [
        '.TH CARETAKER.TOML 5 %s "caretaker %s" "File Formats Manual"' % (date, version),
        ".SH NAME",
        "caretaker.toml \\- configuration file of caretaker (jobs.toml)",
        ".SH SYNOPSIS",
        ".B /etc/caretaker/jobs.toml",
        ".SH DESCRIPTION",
    ]
    paragraph = []

    def flush():
        if paragraph:
            if not out[-1].startswith((".SH", ".SS")):
                out.append(".PP")
            for text in paragraph:
                out.extend(lines_of(inline(text)))
            paragraph.clear()

    for text in lines[1:]:
        if text.startswith("## "):
            flush()
            out.append(".SS " + inline(text[3:]))
        elif text.startswith("|"):
            flush()
            row = cells(text)
            if row[0] == "key" or set(text) <= set("|- "):
                continue
            key, kind, default, bounds, effect = row
            out.append(".TP")
            out.extend(lines_of(inline(key)))
            facts = "%s; default %s" % (kind, default)
            if bounds:
                facts += "; " + bounds
            out.extend(lines_of(inline(facts) + "."))
            out.append(".br")
            out.extend(lines_of(inline(effect)))
        elif text.startswith("- "):
            flush()
            out.append(".IP \\(bu 2")
            out.extend(lines_of(inline(text[2:])))
        elif text.strip():
            paragraph.append(text.strip())
        else:
            flush()
    flush()
    out += [
        ".SH FILES",
        ".TP",
        ".I /etc/caretaker/jobs.toml",
        "The configuration the service and the commands read by default.",
        ".TP",
        ".I /usr/share/doc/caretaker/docs/",
        "The manual: the jobs, the database, monitoring, troubleshooting.",
        ".SH SEE ALSO",
        ".BR caretaker (1),",
        ".BR caretaker-run (1),",
        ".BR caretaker-check (1),",
        ".BR caretaker-migrate (1)",
    ]
    print("\n".join(out))


if __name__ == "__main__":
    main()
