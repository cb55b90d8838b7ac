#!/usr/bin/env python3
"""The shared library exports exactly the functions include/onnxgrad.h declares.

Usage: check_symbols.py LIBRARY HEADER

Compares the defined dynamic symbols (`nm -D --defined-only`) with the functions the header
declares and prints both differences: a declared function that is not exported (a missing
OG_API, or a declaration without a definition) and an exported symbol that is not declared
(an internal one leaking out of the library).  Exit 0 when the sets are equal, 1 when they
differ, 77 (CTest's skip) when the check means nothing: a static library or no nm.
"""
import re
import shutil
import subprocess
import sys

SKIP = 77

# Symbols the linker itself defines in every shared object on some toolchains.
LINKER_SYMBOLS = {"_init", "_fini", "_edata", "_end", "__bss_start"}


def declared_functions(header_text):
    """Names of the functions a C header declares: og_xxx followed by '(' outside comments
    (a function-pointer typedef's name is followed by ')', and a function pointer's return
    type by '(*', so neither is counted)."""
    text = re.sub(r"/\*.*?\*/", " ", header_text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)
    # "og_status (*fn)(...)": the return type of a function pointer, not a function
    return set(re.findall(r"\b(og_[A-Za-z0-9_]+)\s*\((?!\s*\*)", text))


def exported_symbols(library):
    out = subprocess.run(["nm", "-D", "--defined-only", library], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        name = fields[-1].split("@")[0]  # versioned names: foo@@VERSION
        if name not in LINKER_SYMBOLS:
            names.add(name)
    return names


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    library, header = sys.argv[1], sys.argv[2]
    if not re.search(r"\.(so(\.[0-9]+)*|dylib)$", library):
        print("skipped: %s is not a shared library" % library)
        return SKIP
    if not shutil.which("nm"):
        print("skipped: no nm on PATH")
        return SKIP
    with open(header, encoding="utf-8") as f:
        declared = declared_functions(f.read())
    exported = exported_symbols(library)
    missing = sorted(declared - exported)
    extra = sorted(exported - declared)
    if missing:
        print("declared in %s but not exported (%d):" % (header, len(missing)))
        for name in missing:
            print("  " + name)
    if extra:
        print("exported but not declared in the header (%d):" % len(extra))
        for name in extra:
            print("  " + name)
    if missing or extra:
        return 1
    print("%d functions declared, the same %d exported" % (len(declared), len(exported)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
