#!/usr/bin/env python3
"""What the commands' --help says, compared with what their man pages say.

Used by manpages.bats, and by completion.bats for the commands and options
the completion must offer. The man pages are the reStructuredText sources
in Documentation/man/ (NAME.SECTION.rst); their layout is:

  SECTION TITLE      a line underlined with '=' (.SH in the man page)
  sub title          a line underlined with '-' (.SS), one per subcommand,
                     whose first word is the subcommand's name
  -x|--long <arg>    an option: a definition-list term at column 0,
      text           its text indented on the next line

--help prints an option as four spaces, the option, two spaces or more and
its text (common/help.c); wrapped text starts further right.

  helptext.py check [GROUP...]   compare every command's options (or those of
                                 the command groups named), print mismatches
  helptext.py coverage           every command listed by --help has its page
                                 or section, every section a command
  helptext.py mount-options      the mount options 'mfs mount --help' lists
                                 are all in mfs(5) MOUNT OPTIONS
  helptext.py options-man PAGE SECTION [SUBCOMMAND]
  helptext.py options-help CMD...  the options one side sees, one a line
  helptext.py options-help-all   every command and its --help's options:
                                 "mfs device add<TAB>-K --force ..."
  helptext.py commands           every command, one a line ("mfs device add")
  helptext.py mount-options-help the names of the mount options of --help

The mfs binary is taken from $MFS_BUILD, the pages from $MFS_MAN_DIR
(default: Documentation/man of this source tree).
"""
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAN_DIR = os.environ.get("MFS_MAN_DIR", os.path.join(TOP, "Documentation", "man"))
BUILD = os.environ.get("MFS_BUILD", os.path.join(TOP, "build"))

OPTION_RE = re.compile(r"(?:^|[|\s,\[])(--?[A-Za-z0-9][-A-Za-z0-9]*)")
HEADING_CHARS = {"=": "section", "-": "subsection"}


def run_help(argv):
    """The --help text of a command run as argv (a list)."""
    exe = os.path.join(BUILD, argv[0])
    res = subprocess.run([exe] + argv[1:] + ["--help"], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit("%s --help exited %d: %s" % (" ".join(argv), res.returncode, res.stderr))
    return res.stdout


def options_of(text):
    """The option names (-x, --long) in an option column or term."""
    return set(OPTION_RE.findall(text))


def help_options(text):
    """The options a --help text lists, its "Global options:" included."""
    opts = set()
    for line in text.splitlines():
        m = re.match(r"^    (-\S.*?)(?:\s{2,}|$)", line)
        if m:
            opts |= options_of(m.group(1))
    return opts


def is_underline(line, char):
    return len(line) > 0 and set(line) == {char}


def parse_page(path):
    """{(section, subsection): [(term, definition_first_line)]} of a page.

    subsection is the first word of the subsection title, or None for
    terms directly under the section.
    """
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks = {}
    section = subsection = None
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        prev = lines[i - 1] if i > 0 else ""
        if not line.strip() or line[0].isspace():
            continue
        heading = None
        for char, kind in HEADING_CHARS.items():
            if is_underline(nxt, char) and len(nxt) >= len(line) and not is_underline(prev, char):
                heading = kind
        if heading == "section":
            section, subsection = line.strip(), None
            blocks.setdefault((section, None), [])
            continue
        if heading == "subsection":
            subsection = line.split()[0]
            blocks.setdefault((section, subsection), [])
            continue
        if is_underline(line, "=") or is_underline(line, "-"):
            continue
        # a definition-list term: the next line holds its indented text
        if nxt[:1].isspace() and nxt.strip():
            blocks.setdefault((section, subsection), []).append((line.strip(), nxt.strip()))
    return blocks


def page_path(page):
    return os.path.join(MAN_DIR, page + ".rst")


def man_options(page, section, subsection=None):
    blocks = parse_page(page_path(page))
    if (section, subsection) not in blocks:
        return None
    opts = set()
    for term, _ in blocks[(section, subsection)]:
        if term.startswith("-"):
            opts |= options_of(term)
    return opts


def listed_commands(argv):
    """The commands a group's --help lists: [(token, is_group)]."""
    text = run_help(argv)
    prefix = "    " + " ".join(argv) + " "
    found = []
    for line in text.splitlines():
        if line.startswith(prefix):
            token = line[len(prefix):].split()[0]
        elif argv == ["mfs"] and line.startswith("    mkfs.mfs "):
            token = "mkfs"		# its synopsis names it by its other name
        else:
            continue
        if token not in [t for t, _ in found]:
            found.append((token, False))
    groups = []
    for token, _ in found:
        sub = run_help(argv + [token])
        groups.append((token, sub.startswith("usage: %s <command>" % " ".join(argv + [token]))))
    return groups


def where_documented(words):
    """(page, section, subsection) documenting the command named by words."""
    if words == ["mfs", "mkfs"]:
        return ("mkfs.mfs.8", "OPTIONS", None)
    if len(words) == 1:
        return (words[0] + ".8", "OPTIONS", None)
    if len(words) == 2:
        page = "mfs-%s.8" % words[1]
        if os.path.exists(page_path(page)):
            return (page, "OPTIONS", None)
        return ("mfs.8", "COMMANDS", words[1])
    return ("mfs-%s.8" % words[1], "SUBCOMMAND", words[2])


def all_commands():
    """Every command the binaries offer, as argv lists, groups expanded."""
    cmds = [["mkfs.mfs"], ["fsck.mfs"], ["mount.mfs"]]
    for token, is_group in listed_commands(["mfs"]):
        if not is_group:
            cmds.append(["mfs", token])
            continue
        for sub, _ in listed_commands(["mfs", token]):
            cmds.append(["mfs", token, sub])
    return cmds


def global_options():
    """mfs's own options, from the first line of 'mfs --help'."""
    first = run_help(["mfs"]).splitlines()[0]
    return options_of(first.split(" <group>")[0])


def check(groups):
    bad = 0
    if not groups or "mfs" in groups:
        have, doc = global_options(), man_options("mfs.8", "GLOBAL OPTIONS")
        for opt in sorted(have ^ (doc or set())):
            print("mfs: global option %s is in %s only" %
                  (opt, "--help" if opt in have else "mfs.8 GLOBAL OPTIONS"))
            bad += 1
    for words in all_commands():
        if groups and (len(words) < 2 or words[1] not in groups) and words[0] not in groups:
            continue
        page, section, sub = where_documented(words)
        have = help_options(run_help(words))
        doc = man_options(page, section, sub)
        name = " ".join(words)
        where = "%s %s%s" % (page, section, " / " + sub if sub else "")
        if doc is None:
            print("%s: no section %s" % (name, where))
            bad += 1
            continue
        for opt in sorted(have - doc):
            print("%s: %s is in --help, not in %s" % (name, opt, where))
            bad += 1
        for opt in sorted(doc - have):
            print("%s: %s is in %s, not in --help" % (name, opt, where))
            bad += 1
    return bad


def coverage():
    """Each listed command has its page or section; each section a command."""
    bad = 0
    top = parse_page(page_path("mfs.8"))
    top_terms = [t.split()[0] for t, _ in top.get(("COMMANDS", None), [])]
    for token, is_group in listed_commands(["mfs"]):
        if is_group:
            page = "mfs-%s.8" % token
            if not os.path.exists(page_path(page)):
                print("group %s: no page %s" % (token, page))
                bad += 1
            if token not in top_terms:
                print("group %s: not under COMMANDS in mfs.8" % token)
                bad += 1
            if not os.path.exists(page_path(page)):
                continue
            blocks = parse_page(page_path(page))
            listed = [t for t, _ in listed_commands(["mfs", token])]
            documented = [s for (sec, s) in blocks if sec == "SUBCOMMAND" and s]
            for sub in listed:
                if sub not in documented:
                    print("mfs %s %s: no subsection in %s" % (token, sub, page))
                    bad += 1
            for sub in documented:
                if sub not in listed:
                    print("%s documents '%s', which 'mfs %s --help' does not list" %
                          (page, sub, token))
                    bad += 1
        else:
            page, section, sub = where_documented(["mfs", token])
            blocks = parse_page(page_path(page))
            if (section, sub) not in blocks and token not in top_terms:
                print("mfs %s: not documented in %s" % (token, page))
                bad += 1
    return bad


def mount_option_names(text):
    """device=PATH, ro, compress=zlib[:LEVEL] (...) -> {device, ro, compress}."""
    text = re.sub(r"\([^)]*\)", "", text)
    names = set()
    for item in re.split(r",\s*", text):
        item = item.strip()
        if item:
            names.add(re.split(r"[=\[|\s]", item)[0])
    return names


def help_mount_options():
    """The names of the mount options 'mfs mount --help' lists."""
    text = run_help(["mfs", "mount"])
    m = re.search(r"^    -o OPTIONS\s+comma separated:(.*?)(?=^    -|\Z)", text, re.S | re.M)
    if not m:
        raise SystemExit("mfs mount --help: no '-o OPTIONS  comma separated: ...' line")
    return mount_option_names(" ".join(m.group(1).split()))


def mount_options():
    """Every mount option 'mfs mount --help' lists is in mfs(5)."""
    have = help_mount_options()
    terms = parse_page(page_path("mfs.5")).get(("MOUNT OPTIONS", None), [])
    doc = set()
    for term, _ in terms:
        doc |= mount_option_names(term)
    bad = 0
    for name in sorted(have - doc):
        print("mount option %s is in 'mfs mount --help', not in mfs.5 MOUNT OPTIONS" % name)
        bad += 1
    return bad


def main(argv):
    if not argv:
        raise SystemExit(__doc__)
    cmd, args = argv[0], argv[1:]
    if cmd == "check":
        return 1 if check(set(args)) else 0
    if cmd == "coverage":
        return 1 if coverage() else 0
    if cmd == "mount-options":
        return 1 if mount_options() else 0
    if cmd == "options-man":
        opts = man_options(args[0], args[1], args[2] if len(args) > 2 else None)
        if opts is None:
            return 1
        print("\n".join(sorted(opts)))
        return 0
    if cmd == "commands":
        print("\n".join(" ".join(words) for words in all_commands()))
        return 0
    if cmd == "mount-options-help":
        print("\n".join(sorted(help_mount_options())))
        return 0
    if cmd == "options-help":
        print("\n".join(sorted(help_options(run_help(args)))))
        return 0
    if cmd == "options-help-all":
        for words in all_commands():
            print("%s\t%s" % (" ".join(words), " ".join(sorted(help_options(run_help(words))))))
        return 0
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
