"""The half of scripts/test_wheel.sh that runs inside the bare Debian root, with the wheel installed
in a fresh virtual environment: the wheel's `tfm` command and Python API make a vocabulary, train,
translate and score a tiny model, and say what is missing when asked for a GPU or several ranks.
Every output is a file in WORK that the shell script compares with what the C++ `tfm` of the
build tree made of the same input.

Usage: python test_wheel_inside.py WORK [OPTION=VALUE ...]   (the training options, in the
Python API's names; the script gives the same ones to `tfm train` as flags)
"""
import os
import subprocess
import sys

import tfm

work = sys.argv[1]
options = {}
for arg in sys.argv[2:]:
    name, value = arg.split("=", 1)
    options[name] = int(value) if value.lstrip("-").isdigit() else value


def path(name):
    return os.path.join(work, name)


def cli(*args, stdin=None, stdout=None):
    """The wheel's `tfm` command (its entry point, on PATH)."""
    subprocess.run(["tfm", *map(str, args)], stdin=stdin, stdout=stdout, check=True)


def write_lines(name, lines):
    with open(path(name), "w") as f:
        f.write("".join(f"{line}\n" for line in lines))


# The vocabulary with the command, the model with the Python API.
cli("vocab", "--input", path("train.de"), path("train.en"), "--size", "36", "--out", path("voc"))
result = tfm.train(path("m"), train_src=path("train.de"), train_trg=path("train.en"),
                   vocab=path("voc.model"), **options)
assert result.updates == options["max_updates"], result.updates

# Translations: the Python API and the command.
with open(path("in.de")) as f:
    source = f.read().splitlines()
translator = tfm.Translator(path("m"), compute_type="auto")
results = translator.translate_batch(source, beam_size=2)
write_lines("py.hyp", [r.hypotheses[0] if r.hypotheses else "" for r in results])
with open(path("in.de")) as fin, open(path("cli.hyp"), "w") as fout:
    cli("translate", "--model", path("m"), "--beam-size", 2, "--precision", "auto", stdin=fin,
        stdout=fout)

# Scores of the training pairs, printed as `tfm score` prints them.
with open(path("train.de")) as f:
    src = f.read().splitlines()[:12]
with open(path("train.en")) as f:
    trg = f.read().splitlines()[:12]
write_lines("score.de", src)
write_lines("score.en", trg)
write_lines("py.score", ["%.9g" % s for s in translator.score_batch(src, trg)])
with open(path("cli.score"), "w") as fout:
    cli("score", "--model", path("m"), "--src", path("score.de"), "--trg", path("score.en"),
        "--precision", "auto", stdout=fout)

# The optional parts this wheel lacks (the CUDA backend) or whose library this root lacks (the MPI
# transport's libmpi): clear errors naming them.
try:
    tfm.Translator(path("m"), device="cuda")
    cuda = "no error"
except tfm.Error as e:
    cuda = str(e)
write_lines("cuda.err", [cuda])
flags = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
p = subprocess.run(["tfm", "train", "--model", path("m_mpi"), "--train-src", path("train.de"),
                    "--train-trg", path("train.en"), "--vocab", path("voc.model"), *flags],
                   env=dict(os.environ, OMPI_COMM_WORLD_SIZE="2"), capture_output=True, text=True)
write_lines("mpi.err", [f"exit {p.returncode}: {p.stderr.strip()}"])

# The version: the package's, the command's (one number, from CMake's project()).
version = subprocess.run(["tfm", "--version"], capture_output=True, text=True, check=True).stdout
write_lines("version", [f"{tfm.__version__} {tfm.build_commit}", version.splitlines()[0]])
