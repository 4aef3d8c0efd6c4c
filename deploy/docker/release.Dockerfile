# syntax=docker/dockerfile:1
# The release image, built by GoReleaser (.goreleaser.yaml) around the
# binary it cross-compiled: the final stage of the repository's Dockerfile
# with that binary in place of the build stage's (deploy/release_test.go
# keeps the two identical; edit both).
FROM gcr.io/distroless/static-debian12:nonroot
COPY pacer /usr/local/bin/pacer
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
