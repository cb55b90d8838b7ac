#!/usr/bin/env python3
"""Training killed and starved: `onnxgrad train --checkpoint` killed with SIGKILL at random
moments (KILLS times; most land while a checkpoint is being written and synced, which is
where a run spends its time on this tiny model), each time leaving a checkpoint that loads
(magic and checksum) and no partial file in its place; resumed to the end, the weights equal
an uninterrupted run's bit for bit.  Then a full disk (RLIMIT_FSIZE below the checkpoint's
size: writes fail with EFBIG) and a read-only folder: a clear error, the previous
checkpoint intact, and for the folder the error comes before any epoch runs.
Usage: train_kill.py ONNXGRAD_CLI [--kills N]"""
import glob
import os
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

EPOCHS = 30


def fnv1a(b):
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def checkpoint_ok(path):
    """What og_trainer_load_checkpoint checks first: the magic and the FNV-1a checksum."""
    b = open(path, "rb").read()
    return len(b) > 16 and b[:8] == b"OGCKPT01" and struct.unpack("<Q", b[-8:])[0] == fnv1a(b[:-8])


def make(d):
    rng = np.random.default_rng(0)
    w = (rng.normal(size=(48, 48)) * 0.1).astype(np.float32)
    b = np.zeros(48, np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["h"]), helper.make_node("Add", ["h", "B"], ["Y"])],
        "lin", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 48])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 48])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(d, "m.onnx"))
    x = rng.normal(size=(16, 48)).astype(np.float32)
    np.savez(os.path.join(d, "d.npz"), X=x, y=np.tanh(x).astype(np.float32))


def train_cmd(cli, d, out, ck, epochs=EPOCHS):
    return [cli, "train", os.path.join(d, "m.onnx"), "--data", os.path.join(d, "d.npz"),
            "--loss", "mse", "--optimizer", "adam", "--lr", "0.01", "--batch-size", "8",
            "--epochs", str(epochs), "--threads", "1", "--seed", "7", "--checkpoint", ck,
            "--resume", "-q", "-o", out]


def weights(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def main():
    cli = sys.argv[1]
    kills = int(sys.argv[sys.argv.index("--kills") + 1]) if "--kills" in sys.argv else 100
    fails = []
    rnd = random.Random(int(os.environ.get("OG_KILL_SEED", "1")))
    with tempfile.TemporaryDirectory() as d:
        make(d)
        # the uninterrupted run, timed to spread the kills over it
        ref_ck = os.path.join(d, "ref.ckpt")
        t0 = time.time()
        p = subprocess.run(train_cmd(cli, d, os.path.join(d, "ref.onnx"), ref_ck),
                           capture_output=True, text=True)
        full = time.time() - t0
        if p.returncode != 0:
            print("FAIL: the uninterrupted run:", p.stderr)
            return 1
        ck = os.path.join(d, "run.ckpt")
        out = os.path.join(d, "run.onnx")
        n_killed = in_write = finished = loaded = 0
        while n_killed < kills:
            proc = subprocess.Popen(train_cmd(cli, d, out, ck), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
            time.sleep(rnd.uniform(0, full * 0.35))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                n_killed += 1
            err = proc.communicate()[1].decode()
            if proc.returncode == 0:
                finished += 1
                os.remove(ck)  # start over: every kill should hit a run in progress
                continue
            if proc.returncode != -signal.SIGKILL:
                fails.append(f"run ended with {proc.returncode}: {err.strip()}")
                break
            temps = glob.glob(ck + ".*")
            in_write += bool(temps)
            for t in temps:  # what a kill during a write leaves: never the checkpoint itself
                os.remove(t)
            if os.path.exists(ck):
                if checkpoint_ok(ck):
                    loaded += 1
                else:
                    fails.append(f"after kill {n_killed}: the checkpoint does not load")
                    break
        # resume to the end: the weights of the uninterrupted run, bit for bit
        p = subprocess.run(train_cmd(cli, d, out, ck), capture_output=True, text=True)
        if p.returncode != 0:
            fails.append("the final resume failed: " + p.stderr.strip())
        else:
            a, b = weights(os.path.join(d, "ref.onnx")), weights(out)
            if a.keys() != b.keys() or any(a[k].tobytes() != b[k].tobytes() for k in a):
                fails.append("resumed weights differ from the uninterrupted run's")
        print(f"{n_killed} kills ({in_write} during a checkpoint write, {loaded} checkpoints "
              f"checked, {finished} runs finished before their kill); the run takes {full:.2f} s")

        # a full disk: the checkpoint cannot be rewritten; the old one stays as it was
        ck2 = os.path.join(d, "disk.ckpt")
        subprocess.run(train_cmd(cli, d, os.path.join(d, "disk.onnx"), ck2, epochs=2),
                       check=True, capture_output=True)
        before = open(ck2, "rb").read()
        limit = len(before) // 2

        def small_files():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        p = subprocess.run(train_cmd(cli, d, os.path.join(d, "disk.onnx"), ck2, epochs=4),
                           capture_output=True, text=True, preexec_fn=small_files)
        ok = (p.returncode == 1 and "File too large" in p.stderr and
              open(ck2, "rb").read() == before and checkpoint_ok(ck2) and
              not glob.glob(ck2 + ".*"))
        print(("ok  " if ok else "FAIL"), "full disk:", p.returncode, p.stderr.strip()[:160])
        if not ok:
            fails.append("full disk")

        # a read-only folder: refused before training, the checkpoint in it intact
        ro = os.path.join(d, "ro")
        os.mkdir(ro)
        shutil.copy(ck2, os.path.join(ro, "c.ckpt"))
        locked = False
        if os.geteuid() == 0:  # root writes anywhere chmod forbids: make the folder immutable
            locked = subprocess.run(["chattr", "+i", ro], capture_output=True).returncode == 0
        else:
            os.chmod(ro, 0o555)
            locked = True
        if not locked:
            print("skip read-only folder: chattr +i is not available here")
        else:
            try:
                for what, args in (("-o", ["-o", os.path.join(ro, "m.onnx")]),
                                   ("--history", ["--history", os.path.join(ro, "h.csv")]),
                                   ("--checkpoint", ["--checkpoint", os.path.join(ro, "c.ckpt")])):
                    cmd = train_cmd(cli, d, os.path.join(d, "ro_out.onnx"),
                                    os.path.join(d, "ro_other.ckpt"), epochs=3)
                    cmd = [c for c in cmd if c != "-q"]
                    if args[0] in cmd:
                        cmd[cmd.index(args[0]) + 1] = args[1]
                    else:
                        cmd += args
                    t0 = time.time()
                    p = subprocess.run(cmd, capture_output=True, text=True)
                    ok = (p.returncode == 1 and "checked before training" in p.stderr and
                          "epoch" not in p.stdout and
                          open(os.path.join(ro, "c.ckpt"), "rb").read() == before)
                    print(("ok  " if ok else "FAIL"), f"read-only folder ({what}):", p.returncode,
                          f"{time.time() - t0:.2f} s |", p.stderr.strip()[:140])
                    if not ok:
                        fails.append(f"read-only folder ({what})")
            finally:
                if os.geteuid() == 0:
                    subprocess.run(["chattr", "-i", ro])
                else:
                    os.chmod(ro, 0o755)
    for f in fails:
        print("FAIL:", f)
    print(f"{0 if fails else 1} passed, {1 if fails else 0} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
