# A Ray node for the CUDA side of a comparison: Python, Ray, torch and parity at the
# versions of its ARGs (the Trainium image, neuron.Dockerfile, pins the same
# ones, so a driver and every node agree). Build from the repository root:
#   docker build -f deploy/cuda.Dockerfile -t REGISTRY/parity-cuda:VERSION .
# The host supplies the NVIDIA driver (the NVIDIA device plugin on the node group); the
# CUDA runtime libraries come with torch's CUDA wheels.
FROM ubuntu:22.04

ARG PYTHON_VERSION=3.11
ARG RAY_VERSION=2.60.0
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu128

ENV DEBIAN_FRONTEND=noninteractive \
    PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    GRPC_ENABLE_FORK_SUPPORT=false \
    RAY_USAGE_STATS_ENABLED=0

RUN apt-get update \
 && apt-get install -y --no-install-recommends software-properties-common ca-certificates curl \
 && add-apt-repository -y ppa:deadsnakes/ppa \
 && apt-get install -y --no-install-recommends \
      python${PYTHON_VERSION} python${PYTHON_VERSION}-venv python${PYTHON_VERSION}-dev \
 && rm -rf /var/lib/apt/lists/* \
 && python${PYTHON_VERSION} -m venv /opt/venv

RUN pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"
COPY . /src/parity
RUN pip install --no-cache-dir "/src/parity[cluster]" "ray[default]==${RAY_VERSION}" \
 && python -c "import parity, ray, torch; print('parity', parity.__version__, 'ray', ray.__version__, 'torch', torch.__version__)"

WORKDIR /work
