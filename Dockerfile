# syntax=docker/dockerfile:1
# pacer: a static binary on a distroless base, running as a non-root user.

FROM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/pacer ./cmd/pacer \
 && CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w" \
      -o /out/pacer-dev ./cmd/pacer-dev

# Developer and compose helpers (mock API, load producer): target "dev".
FROM gcr.io/distroless/static-debian12:nonroot AS dev
COPY --from=build /out/pacer-dev /usr/local/bin/pacer-dev
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/pacer-dev"]

# The worker (the default target): only cmd/pacer.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/pacer /usr/local/bin/pacer
COPY configs/*.yaml /etc/pacer/
USER nonroot:nonroot
# Inside a container the admin listener must listen on every interface to be
# reachable (and health-checked), and Kafka is reached by its service name.
ENV PACER_ADMIN_LISTEN=0.0.0.0:8484 \
    PACER_ADMIN_ALLOW_REMOTE=true \
    KAFKA_BROKERS=kafka:9092
EXPOSE 8484
# distroless has no shell, curl or wget: pacer checks itself (GET /readyz).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=6 \
  CMD ["/usr/local/bin/pacer", "healthcheck", "--addr", "127.0.0.1:8484"]
ENTRYPOINT ["/usr/local/bin/pacer"]
CMD ["run", "-c", "/etc/pacer/kafka-to-http.yaml"]
