package dev.affinity.nativebridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.executor.ExecutorException;
import dev.affinity.nativebridge.ExecutorBackendProvider.Capability;
import dev.affinity.nativebridge.python.PyTorchBackendProvider;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The backends are plug-ins found through ServiceLoader. */
class ExecutorBackendsTest {

  @Test
  void theBuiltInBackendsAreFoundWithTheirCapabilities() {
    assertEquals(List.of("sim", "pytorch"), List.copyOf(ExecutorBackends.names()));
    assertInstanceOf(SimBackendProvider.class, ExecutorBackends.get("sim"));
    assertEquals(Set.of(), ExecutorBackends.get("sim").capabilities());
    assertInstanceOf(PyTorchBackendProvider.class, ExecutorBackends.get("pytorch"));
    assertEquals(Set.of(Capability.MODEL_TOKENIZER), ExecutorBackends.get("pytorch").capabilities());
    assertTrue(ExecutorBackends.find("tpu").isEmpty());
    ExecutorException e = assertThrows(ExecutorException.class, () -> ExecutorBackends.get("tpu"));
    assertEquals("unknown executor backend \"tpu\" (available: sim,pytorch)", e.getMessage());
  }

  @Test
  void anExecutorTakesItsNameAndCapabilitiesFromItsProvider() {
    try (NativeExecutor sim = NativeExecutor.create("sim", SimTestSupport.SMALL_VIRTUAL)) {
      assertEquals("sim", sim.backend());
      assertEquals(false, sim.hasModelTokenizer());
    }
  }
}
