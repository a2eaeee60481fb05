package io.orbite.engine.rail

import io.orbite.engine.PropertySupport
import io.orbite.engine.rail.RailHealth.{Admission, Pair, Policy, State, Ticket}
import java.time.Duration
import org.scalacheck.Gen
import org.scalatest.flatspec.AnyFlatSpec
import scala.collection.mutable

/**
 * The rail circuit (C13) under any interleaving of admissions, outcomes, cancellations, port
 * faults, looks and the passing of time, over a few pairs and a small table: a pair closes again
 * only on the success of its one current trial; at most one trial runs per pair; a trial comes
 * only after the cooldown; a failed trial doubles the cooldown up to the maximum; a closed pair
 * opens only on a failure or a port fault; a look changes nothing; the table stays bounded.
 */
class RailHealthSpec extends AnyFlatSpec with PropertySupport {
  override protected def cases: Int = 300

  private sealed trait Op
  private case class Admit(pair: Int) extends Op
  private case class Succeed(pick: Int) extends Op
  private case class Fail(pick: Int) extends Op
  private case class Cancel(pick: Int) extends Op
  private case class Advance(millis: Long) extends Op
  private case class PortFault(rail: Int) extends Op
  private case class Look(pair: Int) extends Op

  private val pairs = Vector(new Pair(1, 0, 0), new Pair(1, 0, 1), new Pair(1, 1, 0), new Pair(2, 0, 0))

  private val genOp: Gen[Op] = Gen.frequency(
    6 -> Gen.choose(0, 3).map(Admit.apply),
    3 -> Gen.choose(0, 1000).map(Succeed.apply),
    5 -> Gen.choose(0, 1000).map(Fail.apply),
    1 -> Gen.choose(0, 1000).map(Cancel.apply),
    4 -> Gen.frequency(3 -> Gen.choose(1L, 3000L), 1 -> Gen.choose(20000L, 320000L)).map(Advance.apply),
    1 -> Gen.choose(0, 1).map(PortFault.apply),
    2 -> Gen.choose(0, 3).map(Look.apply))

  private val genCase: Gen[(List[Op], Int, Long)] = for {
    n <- Gen.choose(20, 300)
    ops <- Gen.listOfN(n, genOp)
    maxPairs <- Gen.choose(2, 4)
    probeMillis <- Gen.oneOf(0L, 1000L)
  } yield (ops, maxPairs, probeMillis)

  "the rail circuit" should "close only on its current trial's success, one trial at a time, after the cooldown" in {
    forAll(genCase) { case (ops, maxPairs, probeMillis) =>
      var now = 5_000_000_000L
      val policy = new Policy(3, Duration.ofSeconds(10), Duration.ofSeconds(30),
        Duration.ofMillis(probeMillis), Duration.ofMinutes(5), maxPairs)
      val health = new RailHealth(policy, () => now)
      val held = mutable.ArrayBuffer.empty[Ticket]
      val currentTrial = mutable.Map.empty[Pair, Ticket]
      val openedAt = mutable.Map.empty[Pair, Long]

      def cooldownOf(p: Pair): Duration = {
        import scala.jdk.CollectionConverters._
        health.view().asScala.find(_.pair() == p).map(_.cooldown()).getOrElse(policy.cooldown())
      }

      for (op <- ops) {
        val before = pairs.map(p => p -> health.state(p)).toMap
        val cooldownsBefore = pairs.map(p => p -> cooldownOf(p)).toMap
        val counts = health.counts()
        op match {
          case Admit(i) =>
            val p = pairs(i)
            health.admit(p) match {
              case a: Admission.Admitted =>
                val t = a.ticket()
                held += t
                if (t.trial()) {
                  withClue(s"a second trial of $p: ") { currentTrial.get(p) shouldBe None }
                  before(p) shouldBe State.OPEN
                  (now - openedAt(p)) should be >= cooldownsBefore(p).toNanos
                  currentTrial(p) = t
                } else {
                  before(p) shouldBe State.CLOSED
                }
              case _: Admission.Refused => before(p) should not be State.CLOSED
              case _: Admission.Exhausted => health.view().size() shouldBe maxPairs
            }
          case Succeed(k) if held.nonEmpty =>
            val t = held.remove(k % held.size)
            health.succeeded(t)
            if (currentTrial.get(t.pair()).contains(t)) {
              currentTrial.remove(t.pair())
              withClue(s"the current trial of ${t.pair()} succeeded: ") {
                health.state(t.pair()) shouldBe State.CLOSED
              }
            }
          case Fail(k) if held.nonEmpty =>
            val t = held.remove(k % held.size)
            val wasCurrent = currentTrial.get(t.pair()).contains(t)
            health.failed(t)
            if (wasCurrent) {
              currentTrial.remove(t.pair())
              health.state(t.pair()) shouldBe State.OPEN
              cooldownOf(t.pair()) shouldBe Seq(cooldownsBefore(t.pair()).multipliedBy(2), policy.maxCooldown()).min
            }
          case Cancel(k) if held.nonEmpty =>
            val t = held.remove(k % held.size)
            health.cancelled(t)
            if (currentTrial.get(t.pair()).contains(t)) currentTrial.remove(t.pair())
          case Advance(ms) => now += ms * 1_000_000L
          case PortFault(rail) =>
            health.portFault(rail)
            pairs.filter(_.localRail() == rail).foreach(currentTrial.remove)
          case Look(i) =>
            health.healthy(pairs(i))
            health.counts() shouldBe counts
          case _ => ()
        }
        for (p <- pairs) {
          val after = health.state(p)
          if (before(p) != State.CLOSED && after == State.CLOSED) {
            withClue(s"$p closed on $op: ") {
              op match {
                case Succeed(_) => ()
                case other => fail(s"closed by $other")
              }
            }
            health.counts().recoveries() shouldBe counts.recoveries() + 1
          }
          if (before(p) == State.CLOSED && after == State.OPEN) {
            op match {
              case Fail(_) | PortFault(_) => ()
              case other => fail(s"$p opened by $other")
            }
          }
          // A cancelled trial returns the pair to OPEN without a new cooldown; anything else that
          // leaves it OPEN opened it now.
          if (after == State.OPEN && before(p) != State.OPEN && !op.isInstanceOf[Cancel]) openedAt(p) = now
          val c = cooldownOf(p)
          c.compareTo(policy.cooldown()) should be >= 0
          c.compareTo(policy.maxCooldown()) should be <= 0
        }
        health.view().size() should be <= maxPairs
      }
    }
  }
}
