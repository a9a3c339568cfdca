package dev.affinity.tokenizer;

/**
 * A chat template that did not render: the template itself refused the conversation ({@code raise_exception}, for
 * example roles that do not alternate: the worker refuses it too), or the engine reported an error.
 */
public final class TemplateException extends RuntimeException {
  private final boolean raisedByTemplate;

  TemplateException(String message, boolean raisedByTemplate) {
    super(message);
    this.raisedByTemplate = raisedByTemplate;
  }

  /** Whether the template's own {@code raise_exception} refused the conversation. */
  public boolean raisedByTemplate() {
    return raisedByTemplate;
  }
}
