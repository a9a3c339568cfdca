package dev.affinity.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class KvHashCommandTest {
  private record Result(int code, String out, String err) {}

  private static Result run(String stdin, String... args) {
    KvHashCommand cmd = new KvHashCommand();
    cmd.in = new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8));
    CommandLine cl = new CommandLine(cmd);
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    int code = cl.execute(args);
    return new Result(code, out.toString(), err.toString());
  }

  @Test
  void hashesGoldenCasesInEachFormat() {
    // first golden case: tokens_per_block 2, tokens [23682, 44410], salt "tenant-a"
    String in = "[23682, 44410]\n";
    assertEquals("[13125041156801910810]\n",
        run(in, "--algo", "v1_block_key", "--tokens-per-block", "2", "--cache-salt", "tenant-a").out());
    assertEquals("[\"8e3e5d894fbe3dd013c6c0a5660d6b8a075ce0ada8f9fffaf8df7dc82210c3cc\"]\n",
        run(in, "--algo", "v2_sha256", "--tokens-per-block", "2", "--cache-salt", "tenant-a").out());
    assertEquals("[10249732646271598032]\n",
        run(in, "--algo", "v2_sha256_64", "--tokens-per-block", "2", "--cache-salt", "tenant-a").out());
  }

  @Test
  void badLinesAreReportedWithoutStoppingTheGoodOnes() {
    Result r = run("[1,2,3]\nnot json\n[1, -2]\n{\"a\":1}\n\n[4,5,6]\n", "--algo", "v1_block_key", "--tokens-per-block", "2");
    assertEquals(1, r.code());
    assertEquals(2, r.out().lines().count(), r.out());
    assertTrue(r.err().contains("line 2: not JSON"), r.err());
    assertTrue(r.err().contains("line 3: element 1 is not a token id"), r.err());
    assertTrue(r.err().contains("line 4: expected a JSON array of token ids, found object"), r.err());
  }

  @Test
  void badOptionsAreUsageErrors() {
    assertEquals(2, run("", "--algo", "xxh3", "--tokens-per-block", "2").code());
    Result r = run("", "--algo", "v1_block_key", "--tokens-per-block", "0");
    assertEquals(2, r.code());
    assertTrue(r.err().contains("--tokens-per-block must be > 0"), r.err());
  }
}
