# hermes-janitor as a service: `watch` on the engine socket mounted into the container.
#
# Build from a prepared context (built dist/, production node_modules), which scripts/build-image.sh makes:
#   bash scripts/build-image.sh -t hermes-janitor            # any `docker build` flags after it
# Run:
#   docker run -d --name hermes-janitor --restart unless-stopped --network none --pid=host \
#     -v /var/run/docker.sock:/var/run/docker.sock -v hermes-janitor:/var/lib/hermes-janitor hermes-janitor
#
# --pid=host: the janitor must see the host's processes (a living hermes owns its sandboxes, an exec's client waits
# for its exec, a shell snapshot's owner may still use it). In a pid namespace of its own it sees none of them; it
# knows it, counts every owner as unverifiable (every sandbox owned, no exec tree ended, no snapshot removed) and
# says so in its log and in `status` (docs/watch.md, "Running it on a host").
#
# The base image is an argument: any image with a Node.js 20+ `node` on its PATH (no shell or npm needed).
ARG BASE_IMAGE=node:20-bookworm-slim
FROM ${BASE_IMAGE}

LABEL org.opencontainers.image.title="hermes-janitor" \
      org.opencontainers.image.description="Removes orphaned hermes-agent containers at their deadline (watch on the engine event stream)"

ENV NODE_ENV=production \
    HERMES_HOME=/var/lib/hermes-janitor \
    DOCKER_HOST=unix:///var/run/docker.sock
WORKDIR /opt/hermes-janitor
COPY package.json package-lock.json ./
COPY node_modules ./node_modules
COPY bin ./bin
COPY dist ./dist

# The engine socket is mounted here; the janitor's lock lives in HERMES_HOME (a volume keeps it across restarts).
VOLUME ["/var/lib/hermes-janitor"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/opt/hermes-janitor/bin/hermes-janitor.js"]
CMD ["watch", "--all-profiles"]
