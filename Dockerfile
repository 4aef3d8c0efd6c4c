# syntax=docker/dockerfile:1
# pacer: a static binary on a distroless base, running as a non-root user.

FROM golang:1.26 AS build
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
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/pacer"]
CMD ["run", "-c", "/etc/pacer/kafka-to-http.yaml"]
