package io.orbite.qualification.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.fields;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaAccess;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import io.orbite.engine.Engine;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.Registration;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.agrona.concurrent.AgentRunner;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The structure issue 37 gave the engine, checked on the compiled product classes: one lane runtime
 * makes every thread of the transports; every peer channel's state is its {@link ChannelGate}; the
 * exported packages publish no mutable field; {@link FaultHooks} lies outside the exported API; and
 * the API's {@link Engine}, {@link RegisteredMemory} and {@link RemoteSegment} are sealed. See
 * docs/architecture.md, "The lane runtime", "Channels and their one state" and "Modules as built".
 */
class StructureArchTest {
  private static JavaClasses product;

  @BeforeAll
  static void importProduct() {
    product =
        ProductClasses.load(
            "io.orbite.transport.lane.LaneRuntime",
            "io.orbite.transport.tcp.RequesterLane",
            "io.orbite.transport.shm.ShmLane",
            "io.orbite.engine.spi.ChannelGate");
  }

  /** A call that makes or starts a thread, or runs an agent on one. */
  private static final DescribedPredicate<JavaAccess<?>> MAKES_A_THREAD =
      DescribedPredicate.describe(
          "makes or starts a thread",
          access -> {
            String owner = access.getTargetOwner().getName();
            String name = access.getName();
            boolean thread =
                owner.equals(Thread.class.getName())
                    && Set.of("<init>", "start", "ofPlatform", "ofVirtual", "startVirtualThread")
                        .contains(name);
            boolean builder = owner.startsWith(Thread.class.getName() + "$Builder");
            // A pool is fine when its threads come from a factory (LaneRuntime.factory's).
            boolean pool =
                owner.equals(java.util.concurrent.Executors.class.getName())
                    && name.startsWith("new")
                    && !(access instanceof com.tngtech.archunit.core.domain.JavaCall<?> call
                        && call.getTarget().getRawParameterTypes().stream()
                            .anyMatch(
                                t -> t.isEquivalentTo(java.util.concurrent.ThreadFactory.class)));
            boolean runner =
                owner.equals(AgentRunner.class.getName())
                    && (name.equals("<init>") || name.equals("startOnThread"));
            return thread || builder || pool || runner;
          });

  @Test
  void onlyTheLaneRuntimeStartsLaneThreads() {
    noClasses()
        .that()
        .resideInAPackage("io.orbite.transport..")
        .and()
        .resideOutsideOfPackage("io.orbite.transport.lane..")
        .should()
        .accessTargetWhere(MAKES_A_THREAD)
        .because(
            "every lane runs on the lane runtime, and every other thread of a transport is made by"
                + " it too (LaneRuntime.start, startBlocking, factory)")
        .check(product);
  }

  /** A channel whose state lives in a ChannelGate, and nowhere beside it. */
  private static final ArchCondition<JavaClass> KEEP_THEIR_STATE_IN_A_GATE =
      new ArchCondition<>("keep their state in one ChannelGate and no flag beside it") {
        @Override
        public void check(JavaClass c, ConditionEvents events) {
          boolean gate =
              c.getAllFields().stream()
                  .anyMatch(
                      f ->
                          f.getModifiers().contains(JavaModifier.FINAL)
                              && (f.getRawType().isEquivalentTo(ChannelGate.class)
                                  || f.getRawType().getAllFields().stream()
                                      .anyMatch(
                                          g ->
                                              g.getModifiers().contains(JavaModifier.FINAL)
                                                  && g.getRawType()
                                                      .isEquivalentTo(ChannelGate.class))));
          events.add(
              new SimpleConditionEvent(
                  c, gate, c.getName() + (gate ? " holds" : " holds no") + " final ChannelGate"));
          for (JavaField f : c.getFields()) {
            boolean flag =
                !f.getModifiers().contains(JavaModifier.FINAL)
                    && !f.getModifiers().contains(JavaModifier.STATIC)
                    && (f.getRawType().isEquivalentTo(boolean.class)
                        || f.getRawType().isEquivalentTo(Boolean.class)
                        || f.getRawType().isEquivalentTo(String.class));
            if (flag) {
              events.add(
                  SimpleConditionEvent.violated(
                      f, f.getFullName() + " is a state flag beside the channel's gate"));
            }
          }
        }
      };

  @Test
  void everyPeerChannelsStateIsAChannelGate() {
    classes()
        .that()
        .implement(PeerChannel.class)
        .should(KEEP_THEIR_STATE_IN_A_GATE)
        .because("one channel lifecycle: the same states and kinds on every transport (C18)")
        .check(product);
  }

  /**
   * Types whose instances a reader cannot change: values, and final classes whose own fields are
   * all final (a LongAdder or an AtomicLong is neither).
   */
  private static boolean immutableType(JavaClass t) {
    return t.isPrimitive()
        || t.isEnum()
        || t.isRecord()
        || t.isEquivalentTo(String.class)
        || t.isEquivalentTo(Long.class)
        || t.isEquivalentTo(Integer.class)
        || t.isEquivalentTo(java.time.Duration.class)
        || t.getModifiers().contains(JavaModifier.FINAL)
            && t.getName().startsWith("io.orbite.")
            && t.getFields().stream()
                .filter(f -> !f.getModifiers().contains(JavaModifier.STATIC))
                .allMatch(f -> f.getModifiers().contains(JavaModifier.FINAL));
  }

  @Test
  void noPublicMutableFieldInTheExportedPackages() throws Exception {
    Set<String> exported = exportedPackages();
    assertTrue(exported.contains("io.orbite.engine"), exported::toString);
    fields()
        .that()
        .arePublic()
        .and()
        .areDeclaredInClassesThat(
            DescribedPredicate.describe(
                "reside in an exported package", c -> exported.contains(c.getPackageName())))
        .should(
            new ArchCondition<JavaField>("be static final constants of an immutable type") {
              @Override
              public void check(JavaField f, ConditionEvents events) {
                boolean ok =
                    f.getModifiers().contains(JavaModifier.FINAL)
                        && (immutableType(f.getRawType())
                            || f.getModifiers().contains(JavaModifier.STATIC)
                                && f.getRawType().isInterface());
                events.add(
                    new SimpleConditionEvent(
                        f, ok, f.getFullName() + " is " + (ok ? "" : "not ") + "an immutable one"));
              }
            })
        .because("a reader of the API must not be able to write the engine's state")
        .check(product);
  }

  /**
   * Every package a main module's descriptor exports, to everyone or to named modules: read from
   * the compiled module-info of each module.
   */
  private static Set<String> exportedPackages() throws Exception {
    Set<String> out = new TreeSet<>();
    for (ModuleDescriptor d : descriptors().values()) {
      d.exports().forEach(e -> out.add(e.source()));
    }
    return out;
  }

  private static Map<String, ModuleDescriptor> descriptors() throws Exception {
    Map<String, ModuleDescriptor> out = new TreeMap<>();
    for (String module :
        List.of(
            "config", "native-bindings", "engine-actors", "transport-actors", "observability")) {
      Path classes = Path.of("..", module, "target", "classes");
      ModuleFinder.of(classes)
          .findAll()
          .forEach(r -> out.put(r.descriptor().name(), r.descriptor()));
    }
    assertEquals(5, out.size(), out::toString);
    return out;
  }

  @Test
  void faultHooksLieOutsideTheExportedApi() throws Exception {
    ModuleDescriptor engine = descriptors().get("io.orbite.engine");
    String pkg = FaultHooks.class.getPackageName();
    ModuleDescriptor.Exports fault =
        engine.exports().stream().filter(e -> e.source().equals(pkg)).findFirst().orElseThrow();
    assertTrue(fault.isQualified(), pkg + " must not be exported to every module");
    assertEquals(
        Set.of("io.orbite.transport", "io.orbite.qualification"),
        fault.targets(),
        "the fault hooks reach the transports and the qualification tests only");
    Set<String> api =
        engine.exports().stream()
            .filter(e -> !e.isQualified())
            .map(ModuleDescriptor.Exports::source)
            .collect(Collectors.toSet());
    assertEquals(Set.of("io.orbite.engine", "io.orbite.engine.streams"), api);
    assertFalse(api.contains(pkg));
    // No public member of an API type names it either: LayeringArchTest checks that the API
    // exposes no internal type, and io.orbite.engine.fault is one.
  }

  @Test
  void theApisEngineRegisteredMemoryAndRemoteSegmentAreSealed(@TempDir Path dir) throws Exception {
    assertTrue(Engine.class.isSealed());
    assertTrue(RegisteredMemory.class.isSealed());
    assertTrue(RemoteSegment.class.isSealed());
    assertEquals(
        List.of(TransferEngine.class), Arrays.asList(Engine.class.getPermittedSubclasses()));
    assertEquals(
        List.of(Registration.class),
        Arrays.asList(RegisteredMemory.class.getPermittedSubclasses()));
    assertEquals(
        List.of(PeerSegment.class), Arrays.asList(RemoteSegment.class.getPermittedSubclasses()));

    // An application's own implementation does not compile.
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    List<String> refused = new ArrayList<>();
    for (String type : List.of("RegisteredMemory", "RemoteSegment", "Engine")) {
      Path source = dir.resolve("Fake" + type + ".java");
      Files.writeString(
          source, "abstract class Fake" + type + " implements io.orbite.engine." + type + " {}\n");
      java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
      int rc =
          javac.run(
              null,
              null,
              err,
              "-d",
              dir.resolve("out").toString(),
              "-cp",
              System.getProperty("java.class.path"),
              source.toString());
      assertTrue(rc != 0, "Fake" + type + " compiled");
      refused.add(err.toString());
    }
    for (String e : refused) {
      assertTrue(e.contains("sealed"), e);
    }
  }
}
