package dev.affinity.server.shared;

import dev.affinity.config.SharedStateSettings;
import io.nats.client.Connection;
import io.nats.client.ConnectionListener;
import io.nats.client.Nats;
import io.nats.client.Options;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The NATS connection of {@code affinity.shared_state}: its options (servers, reconnecting for ever, token, user and
 * password or creds file, TLS with the system's or a PEM file's trust), and its connection events and errors in the
 * log through SLF4J ({@link NatsErrorLog}).
 */
final class NatsConnections {
  private static final Logger log = LoggerFactory.getLogger(NatsConnections.class);

  private NatsConnections() {
  }

  /** Connects as {@code name}; the error names the servers and the kind of authentication, never a secret. */
  static Connection connect(SharedStateSettings settings, String name) throws IOException {
    try {
      return Nats.connect(options(settings, name));
    } catch (IOException e) {
      throw new IOException("affinity.shared_state.nats: cannot connect to " + String.join(",", settings.servers())
          + " (" + settings.authKind() + "): " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while connecting to NATS", e);
    }
  }

  static Options options(SharedStateSettings s, String name) throws IOException {
    NatsErrorLog errors = new NatsErrorLog();
    Options.Builder b = new Options.Builder().servers(s.servers().toArray(String[]::new))
        .connectionName("affinity " + name).maxReconnects(-1).reconnectWait(Duration.ofMillis(500))
        .reconnectJitter(Duration.ofMillis(250)).connectionTimeout(Duration.ofSeconds(5))
        .connectionListener(new Listener(errors)).errorListener(errors);
    s.token().ifPresent(t -> b.token(t.toCharArray()));
    if (s.user().isPresent()) {
      b.userInfo(s.user().get().toCharArray(), s.password().orElse("").toCharArray());
    }
    s.credsFile().ifPresent(f -> b.authHandler(Nats.credentials(f)));
    if (s.tlsCaFile().isPresent()) {
      b.sslContext(sslContext(Path.of(s.tlsCaFile().get())));
    } else if (s.tls()) {
      try {
        b.secure();
      } catch (java.security.NoSuchAlgorithmException e) {
        throw new IOException("affinity.shared_state: no TLS: " + e.getMessage(), e);
      }
    }
    return b.build();
  }

  /** A TLS context that trusts the certificates of a PEM file. */
  private static SSLContext sslContext(Path ca) throws IOException {
    try (InputStream in = Files.newInputStream(ca)) {
      KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
      store.load(null, null);
      int i = 0;
      for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        store.setCertificateEntry("ca-" + i++, c);
      }
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(store);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx;
    } catch (java.security.GeneralSecurityException e) {
      throw new IOException("affinity.shared_state.tls_ca_file " + ca + ": " + e.getMessage(), e);
    }
  }

  static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Logs the connection's state changes (reconnects are retried for ever). */
  private static final class Listener implements ConnectionListener {
    private final NatsErrorLog errors;

    Listener(NatsErrorLog errors) {
      this.errors = errors;
    }

    @Override
    public void connectionEvent(Connection conn, Events type) {
      switch (type) {
        case DISCONNECTED -> log.warn("NATS disconnected; reconnecting (shared KV events paused)");
        case RECONNECTED -> {
          errors.reset();
          log.info("NATS reconnected to {}", conn.getConnectedUrl());
        }
        case CONNECTED -> {
          errors.reset();
          log.info("NATS connected to {}", conn.getConnectedUrl());
        }
        case CLOSED -> log.debug("NATS connection closed");
        default -> log.debug("NATS {}", type);
      }
    }
  }
}
