/**
 * Dynamic membership ({@code disagg_cluster}) with TensorRT-LLM's keys and storage contract
 * ({@code tensorrt_llm/serve/cluster_storage.py}, {@code tensorrt_llm/serve/disagg_auto_scaling.py}): the
 * storages (the frontend's own HTTP storage, etcd through jetcd, and the HTTP client a worker uses), a
 * worker's registration and heartbeat, the frontend's membership (a watched key prefix feeding the routers),
 * the steady-clock exchange with a joining worker, and the conversation pins several frontends share through
 * etcd. See docs/workers.md.
 */
package dev.affinity.server.cluster;
