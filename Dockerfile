# Verdict's container image: one static binary on an empty base, run as a non-root user.
#
#   docker build -t verdict .
#
# builds the binary with the Go toolchain image (stage "build") and copies it into a scratch
# image (the last stage, "final"). Without access to a registry, build the binary on the host
# and use the "prebuilt" stage instead, which takes the binary, the CA certificates and an
# empty data folder from the build context (scripts/image.sh does exactly that):
#
#   docker build --target prebuilt -f Dockerfile <context with verdict, ca-certificates.crt, data/>
#
# Both stages give the same image. It has no shell, so no HEALTHCHECK: probe GET /healthz (alive)
# and GET /readyz (database, Redis, Docker) from outside, as compose.yaml and Kubernetes do.

# --- prebuilt: a binary built on the host (CGO_ENABLED=0 go build ./cmd/verdict) ---------------
# First, so that `--target prebuilt` stops here even with the classic builder, which builds every
# stage before the target.
FROM scratch AS prebuilt
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --chown=65532:65532 data /data
COPY verdict /verdict
ENV VERDICT_ADDR=0.0.0.0:8080 \
    VERDICT_DATA_DIR=/data
USER 65532:65532
VOLUME ["/data"]
EXPOSE 8080
ENTRYPOINT ["/verdict"]
CMD ["serve"]

# --- build: the static binary, from the module's sources ---------------------------------------
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -tags timetzdata \
        -ldflags "-s -w -X main.version=${VERSION}" -o /out/verdict ./cmd/verdict \
    && mkdir -p /out/data

# --- final: the default target ------------------------------------------------------------------
FROM scratch AS final
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build /out/verdict /verdict
ENV VERDICT_ADDR=0.0.0.0:8080 \
    VERDICT_DATA_DIR=/data
USER 65532:65532
VOLUME ["/data"]
EXPOSE 8080
ENTRYPOINT ["/verdict"]
CMD ["serve"]
