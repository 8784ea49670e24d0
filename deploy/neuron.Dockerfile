# A Ray node for the Trainium side of a comparison (Trn2/Trn3, the native TorchNeuron
# backend: the `neuron` device): the same Python, Ray, torch and parity as
# cuda.Dockerfile, with torch-neuronx for that torch and the Neuron runtime. Build from
# the repository root:
#   docker build -f deploy/neuron.Dockerfile -t REGISTRY/parity-neuron:VERSION .
# The host supplies the Neuron driver (the Neuron device plugin on the node group).
FROM ubuntu:22.04

ARG PYTHON_VERSION=3.11
ARG RAY_VERSION=2.60.0
ARG TORCH_VERSION=2.13.0
ARG TORCH_NEURONX="torch-neuronx==2.13.*"
ARG NEURON_PIP=https://pip.repos.neuron.amazonaws.com
ARG NEURON_APT=https://apt.repos.neuron.amazonaws.com

ENV DEBIAN_FRONTEND=noninteractive \
    PATH=/opt/venv/bin:/opt/aws/neuron/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    GRPC_ENABLE_FORK_SUPPORT=false \
    RAY_USAGE_STATS_ENABLED=0 \
    NEURON_LOGICAL_NC_CONFIG=2

RUN apt-get update \
 && apt-get install -y --no-install-recommends software-properties-common ca-certificates curl gnupg \
 && add-apt-repository -y ppa:deadsnakes/ppa \
 && curl -fsSL "${NEURON_APT}/GPG-PUB-KEY-AMAZON-AWS-NEURON.PUB" | gpg --dearmor -o /usr/share/keyrings/neuron.gpg \
 && echo "deb [signed-by=/usr/share/keyrings/neuron.gpg] ${NEURON_APT} jammy main" > /etc/apt/sources.list.d/neuron.list \
 && apt-get update \
 && apt-get install -y --no-install-recommends \
      python${PYTHON_VERSION} python${PYTHON_VERSION}-venv python${PYTHON_VERSION}-dev \
      aws-neuronx-runtime-lib aws-neuronx-collectives aws-neuronx-tools \
 && rm -rf /var/lib/apt/lists/* \
 && python${PYTHON_VERSION} -m venv /opt/venv

RUN pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url https://download.pytorch.org/whl/cpu \
 && pip install --no-cache-dir --extra-index-url "${NEURON_PIP}" "${TORCH_NEURONX}" "torch==${TORCH_VERSION}"
COPY . /src/parity
RUN pip install --no-cache-dir "/src/parity[cluster]" "ray[default]==${RAY_VERSION}" "torch==${TORCH_VERSION}" \
 && python -c "import parity, ray, torch; print('parity', parity.__version__, 'ray', ray.__version__, 'torch', torch.__version__)"

WORKDIR /work
