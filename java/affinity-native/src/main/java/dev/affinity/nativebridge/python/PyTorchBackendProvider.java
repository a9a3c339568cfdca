package dev.affinity.nativebridge.python;

import dev.affinity.nativebridge.ExecutorBackendProvider;
import java.util.Set;

/**
 * The {@code pytorch} backend (docs/gpu.md): TensorRT-LLM's PyTorch executor in an embedded CPython.
 * Before the native factory runs, {@link PyTorchBackend} resolves the interpreter, its libpython and
 * the Python host library; it counts open executors for the shutdown hook that stops the host.
 */
public final class PyTorchBackendProvider implements ExecutorBackendProvider {
  @Override
  public String name() {
    return PyTorchBackend.NAME;
  }

  @Override
  public Set<Capability> capabilities() {
    return Set.of(Capability.MODEL_TOKENIZER);
  }

  @Override
  public String prepareCreate(String configJson) {
    return PyTorchBackend.prepare(configJson);
  }

  @Override
  public String prepareCheck(String configJson) {
    return PyTorchBackend.prepareForCheck(configJson);
  }

  @Override
  public void opened() {
    PyTorchBackend.opened();
  }

  @Override
  public void closed() {
    PyTorchBackend.closed();
  }
}
