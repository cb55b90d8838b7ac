#!/usr/bin/env python3
"""Check that src/ and tools/ include only downward (docs/ARCHITECTURE.md, "Layers").

Each folder of src/ is a layer with a rank; a file may include the public header, files of
its own folder, and files of folders of a lower rank.  Folders of one rank (onnx and ops,
grad and kernels) are side by side and include neither each other.  No chain of includes
may come back to the file it started from.  Prints every fault with the line that makes it
and exits 1 if there is one.  Usage: check_layers.py [REPO_ROOT]"""
import os
import re
import sys

RANKS = {
    "core": 0,
    "ir": 1,
    "onnx": 2, "ops": 2,
    "grad": 3, "kernels": 3,
    "exec": 4,
    "api": 5,
    "train": 6,
    "tools": 7, "mpi": 7,  # mpi: libonnxgrad_mpi, on the public headers alone
}
PUBLIC = {"onnxgrad.h"}  # include/: the public contract, usable from every layer
# libonnxgrad_mpi's header: for the MPI communicator and the CLI only, so that libonnxgrad
# never reaches MPI
MPI_PUBLIC, MPI_USERS = "onnxgrad_mpi.h", {"mpi", "tools"}
GENERATED = {"onnx.pb-c.h"}  # protobuf-c's, for src/onnx/ alone
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(rel):
    """'src/kernels/cpu/conv.c' -> 'kernels'; 'tools/train.c' -> 'tools'."""
    parts = rel.split("/")
    if parts[0] == "tools":
        return "tools"
    return parts[1] if parts[0] == "src" and len(parts) > 2 else None


def resolve(root, rel, inc):
    """The repository path an include names, or None for one outside src/ and tools/."""
    here = os.path.dirname(rel)
    for cand in (os.path.join(here, inc), os.path.join("src", inc)):
        if os.path.isfile(os.path.join(root, cand)):
            return os.path.normpath(cand)
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    files = []
    for top in ("src", "tools"):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith((".c", ".h", ".inc")):
                    files.append(os.path.relpath(os.path.join(d, n), root))
    faults, edges = [], {}
    for rel in sorted(files):
        layer = layer_of(rel)
        if layer not in RANKS:
            faults.append(f"{rel}: folder '{layer}' has no rank in tests/layers/check_layers.py "
                          "(add it where docs/ARCHITECTURE.md puts it)")
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                if inc in PUBLIC or (inc in GENERATED and layer == "onnx"):
                    continue
                if inc == MPI_PUBLIC:
                    if layer not in MPI_USERS:
                        faults.append(f"{rel}:{lineno}: #include \"{inc}\": only "
                                      f"{sorted(MPI_USERS)} may use libonnxgrad_mpi")
                    continue
                target = resolve(root, rel, inc)
                where = f"{rel}:{lineno}: #include \"{inc}\""
                if target is None:
                    faults.append(f"{where}: not a file of src/ or tools/")
                    continue
                edges.setdefault(rel, []).append((target, lineno))
                tl = layer_of(target)
                if tl == layer:
                    continue
                if tl not in RANKS:
                    faults.append(f"{where}: '{tl}' has no rank")
                elif RANKS[tl] > RANKS[layer]:
                    faults.append(f"{where}: {layer}/ (rank {RANKS[layer]}) includes {tl}/ "
                                  f"(rank {RANKS[tl]}), a layer above it")
                elif RANKS[tl] == RANKS[layer]:
                    faults.append(f"{where}: {layer}/ and {tl}/ stand side by side (rank "
                                  f"{RANKS[tl]}) and include neither each other")
    # include cycles, of any length
    state, stack = {}, []

    def visit(f):
        state[f] = 1
        stack.append(f)
        for t, _ in edges.get(f, []):
            if state.get(t) == 1:
                cyc = stack[stack.index(t):] + [t]
                faults.append("include cycle: " + " -> ".join(cyc))
            elif t not in state:
                visit(t)
        stack.pop()
        state[f] = 2

    for f in sorted(edges):
        if f not in state:
            visit(f)
    for line in faults:
        print(line)
    n_inc = sum(len(v) for v in edges.values())
    print(f"layers: {len(files)} files, {n_inc} includes, {len(faults)} faults")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
