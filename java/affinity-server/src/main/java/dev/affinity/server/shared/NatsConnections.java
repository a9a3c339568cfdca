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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
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

  /**
   * Connects as {@code name}; the error names the servers and the kind of authentication, never a secret.
   * {@code events} hears every state change of the connection (on jnats's thread).
   */
  static Connection connect(SharedStateSettings settings, String name, Consumer<ConnectionListener.Events> events)
      throws IOException {
    try {
      return Nats.connect(options(settings, name, events));
    } catch (IOException e) {
      throw new IOException("affinity.shared_state.nats: cannot connect to " + String.join(",", settings.servers())
          + " (" + settings.authKind() + "): " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while connecting to NATS", e);
    }
  }

  static Options options(SharedStateSettings s, String name) throws IOException {
    return options(s, name, e -> { });
  }

  static Options options(SharedStateSettings s, String name, Consumer<ConnectionListener.Events> events)
      throws IOException {
    NatsErrorLog errors = new NatsErrorLog();
    Options.Builder b = new Options.Builder().servers(s.servers().toArray(String[]::new))
        .connectionName("affinity " + name).maxReconnects(-1).reconnectWait(Duration.ofMillis(500))
        .reconnectJitter(Duration.ofMillis(250)).connectionTimeout(Duration.ofSeconds(5))
        .connectionListener(new Listener(errors, events)).errorListener(errors);
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

  /**
   * Logs the connection's state changes (reconnects are retried for ever): jnats reports a disconnection at each
   * failed reconnect attempt, so only the first after the connection was up is a warning.
   */
  private static final class Listener implements ConnectionListener {
    private final NatsErrorLog errors;
    private final Consumer<Events> events;
    private final AtomicBoolean down = new AtomicBoolean();

    Listener(NatsErrorLog errors, Consumer<Events> events) {
      this.errors = errors;
      this.events = events;
    }

    @Override
    public void connectionEvent(Connection conn, Events type) {
      switch (type) {
        case DISCONNECTED -> {
          if (down.compareAndSet(false, true)) {
            log.warn("NATS disconnected; reconnecting (shared KV events paused)");
          } else {
            log.debug("NATS still disconnected; reconnecting");
          }
        }
        case RECONNECTED -> {
          down.set(false);
          errors.reset();
          log.info("NATS reconnected to {}", conn.getConnectedUrl());
        }
        case CONNECTED -> {
          down.set(false);
          errors.reset();
          log.info("NATS connected to {}", conn.getConnectedUrl());
        }
        case CLOSED -> log.debug("NATS connection closed");
        default -> log.debug("NATS {}", type);
      }
      events.accept(type);
    }
  }
}
