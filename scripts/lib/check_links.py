#!/usr/bin/python3
"""Checks that every relative link in the given Markdown files resolves.

A link resolves when its file exists beside the linking file (as the package
ships them under /usr/share/doc/caretaker/) and, with a #fragment, when the
target page has a heading of that anchor (GitHub's rule: lower case, spaces to
hyphens, punctuation dropped). Web links (http, https, mailto) are not fetched.
With --within DIR, a link that leaves DIR fails too: a shipped page must not
point at a file that is not shipped.

    check_links.py [--within DIR] FILE.md...
Prints each broken link as FILE:LINE: TARGET: why; exits 1 when there is one.
"""

import os
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def anchors(path):
    found = set()
    counts = {}
    in_code = False
    with open(path, encoding="utf-8") as handle:
        for text in handle:
            if text.startswith("```"):
                in_code = not in_code
            if in_code or not text.startswith("#"):
                continue
            title = text.lstrip("#").strip().lower()
            slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
            number = counts.get(slug, 0)
            counts[slug] = number + 1
            found.add(slug if number == 0 else "%s-%d" % (slug, number))
    return found


def main(args):
    within = None
    if args[:1] == ["--within"]:
        within, args = os.path.realpath(args[1]), args[2:]
    broken = 0
    for page in args:
        in_code = False
        with open(page, encoding="utf-8") as handle:
            for number, text in enumerate(handle, 1):
                if text.startswith("```"):
                    in_code = not in_code
                if in_code:
                    continue
                for target in LINK.findall(re.sub(r"`[^`]*`", "", text)):
                    if re.match(r"^(https?|mailto):", target):
                        continue
                    path, _, fragment = target.partition("#")
                    resolved = os.path.realpath(os.path.join(os.path.dirname(page), path)) if path else os.path.realpath(page)
                    why = None
                    if not os.path.exists(resolved):
                        why = "no such file"
                    elif within and not (resolved + os.sep).startswith(within + os.sep):
                        why = "outside the shipped documents"
                    elif fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
                        why = "no heading with that anchor"
                    if why:
                        print("%s:%d: %s: %s" % (page, number, target, why))
                        broken += 1
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
