/**
 * The executor SPI: what Java sees of an in-process executor (the native CPU simulator, the
 * TensorRT-LLM backend, or a test double). Implementations live in {@code affinity-native}; code
 * that only needs to run requests depends on {@link dev.affinity.executor.Executor} alone.
 */
package dev.affinity.executor;
