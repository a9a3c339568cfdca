/**
 * Worker mode ({@code affinity worker}): {@link dev.affinity.server.workermode.WorkerServer} serves one
 * native executor, wrapped in a {@link dev.affinity.nativebridge.worker.NativeWorker}, over the HTTP
 * wire contract and endpoints of a trtllm-serve worker ({@code /v1/completions},
 * {@code /v1/chat/completions}, {@code /health}, {@code /server_info}, {@code /kv_cache_events}) plus
 * Affinity's rank extension, on the frontend's Netty server. See docs/workers.md, "Worker mode".
 */
package dev.affinity.server.workermode;
