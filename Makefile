# Two commands on a fresh machine:  make run   and   make test
# Both install what is missing (Node.js 24 LTS into ~/.cache/sluice, npm packages),
# build, and then start Sluice or run the whole suite.
SHELL := /bin/bash
NODE_BIN := $(shell scripts/node24.sh)
export PATH := $(NODE_BIN):$(PATH)

.PHONY: run test install build lint format check clean bench image

# `npm ci`: exactly the committed lockfile (which lists every platform's
# optional packages, as Node 24's npm writes it), and a fresh clone stays clean.
node_modules/.install-stamp: package.json package-lock.json $(wildcard */package.json) scripts/patch-kafka-client.mjs
	npm ci --no-audit --no-fund
	@touch $@

install: node_modules/.install-stamp

build: install
	npm run build

# Starts gateway + embedded operator; embedded PostgreSQL (PGlite) under
# SLUICE_DATA_DIR unless DATABASE_URL names a server.
run: build
	node gateway/dist/main.js

# The image `make test` starts (e2e/image.test.ts), and the next release's
# (scripts/image/build-next.sh, for the node suite's upgrade): built once per commit.
IMAGE_STAMP := .sluice/image-$(shell git rev-parse --short HEAD 2>/dev/null || echo none).stamp
$(IMAGE_STAMP):
	scripts/image/build.sh
	scripts/image/build-next.sh
	@rm -f .sluice/image-*.stamp && touch $@

# The whole suite against a real PostgreSQL server (installed and started when
# none is reachable) and against PGlite, and against a real Kubernetes API
# server (kube-apiserver + etcd built from Go modules and cached in
# ~/.cache/sluice/kube; docs/testing-kubernetes.md), and against a real Apache
# Kafka broker (KRaft, jars from Maven Central cached in ~/.cache/sluice/kafka;
# docs/testing-kafka.md), and against a real MariaDB server (Debian's package;
# scripts/with-mariadb.sh), never skipping their tests.
# It also starts the Sluice image (docs/image.md), built once per commit, and
# installs the chart with it on a real node of its own (kubelet, containerd,
# scheduler, controller manager, kube-proxy; scripts/with-node.sh, first, so
# the broker also listens on the node's bridge; docs/testing-kubernetes.md).
test: build $(IMAGE_STAMP)
	npm run check:static
	SLUICE_REQUIRE_KUBE=1 SLUICE_REQUIRE_KAFKA=1 SLUICE_REQUIRE_MYSQL=1 SLUICE_REQUIRE_IMAGE=1 SLUICE_REQUIRE_NODE=1 \
	  scripts/with-node.sh scripts/with-postgres.sh scripts/with-kube.sh scripts/with-kafka.sh scripts/with-mariadb.sh npm test

# The Sluice image from the Dockerfile, with buildah: no Docker engine, no
# registry; its base (Debian minbase + Node 24) is made here once per machine.
# Loaded into podman's store (and containerd's when one runs); docs/image.md.
image:
	scripts/image/build.sh

# Builds (once per machine) the Kubernetes parts `make test` runs: kube-apiserver
# and etcd, and the test node's kubelet, scheduler, controller manager, kube-proxy,
# containerd and crictl.
.PHONY: kube
kube:
	scripts/kube/ensure-binaries.sh --node

# The test node by hand (docs/testing-kubernetes.md, "The test node"): a
# cluster with one real node and the image imported, until Ctrl-C, which
# tears it down and puts the host back.
.PHONY: cluster
cluster: build $(IMAGE_STAMP)
	scripts/with-node.sh bash -c 'echo "export KUBECONFIG=$$SLUICE_TEST_NODE_KUBECONFIG   # image $$SLUICE_TEST_NODE_IMAGE, pods reach the host at $$SLUICE_TEST_NODE_HOST_IP; Ctrl-C stops the node"; exec sleep infinity'

# Fetches (once per machine) the Kafka broker jars that `make test` runs.
.PHONY: kafka
kafka:
	scripts/kafka/ensure-jars.sh

# A throw-away Kafka broker and PostgreSQL server on 127.0.0.1 until Ctrl-C,
# for the README's first pipeline; addresses in .sluice/sandbox.env.
.PHONY: sandbox
sandbox: install
	scripts/sandbox.sh

lint: install
	npm run check:static

bench: build
	npm run bench:api
	npm run bench:mapper

clean:
	npm run clean
