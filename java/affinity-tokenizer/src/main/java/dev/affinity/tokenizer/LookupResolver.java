package dev.affinity.tokenizer;

import java.beans.FeatureDescriptor;
import java.util.Iterator;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * A resolver of the chat templates' engine that only answers lookups and calls ({@link PythonStrings},
 * {@link CallLookups}): it sets nothing, types nothing and lists nothing, and leaves all of that to the resolvers after
 * it.
 */
abstract class LookupResolver extends ELResolver {

  @Override
  public Class<?> getType(ELContext context, Object base, Object property) {
    return null;
  }

  @Override
  public void setValue(ELContext context, Object base, Object property, Object value) {}

  @Override
  public boolean isReadOnly(ELContext context, Object base, Object property) {
    return true;
  }

  @Override
  public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
    return null;
  }

  @Override
  public Class<?> getCommonPropertyType(ELContext context, Object base) {
    return null;
  }
}
