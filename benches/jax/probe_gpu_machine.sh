set -x
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit --format=csv
nvcc --version | tail -2
ls /usr/local/ | head; ls -d /usr/local/cuda*/ 2>/dev/null
find / -xdev \( -name 'libnvrtc*.so*' -o -name 'libcuda.so*' -o -name 'libcublasLt.so*' -o -name 'libnvrtc-builtins*' \) 2>/dev/null | head -30
ldconfig -p | grep -E 'nvrtc|libcuda|cublasLt' | head
which compute-sanitizer python3; python3 -c "import sys; print(sys.version)"
cat /etc/os-release | head -2; ldd --version | head -1
