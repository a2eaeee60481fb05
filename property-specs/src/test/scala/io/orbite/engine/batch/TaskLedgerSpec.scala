package io.orbite.engine.batch

import io.orbite.engine.{Access, ErrorKind, Op, PropertySupport, RemoteEffect, TaskState}
import io.orbite.engine.spi.Registration
import org.scalacheck.Gen
import org.scalatest.flatspec.AnyFlatSpec

/**
 * The task ledger under any interleaving of receipt counts and receipts (a lane may answer before
 * dispatch has returned the count): no task has a result before its count and all its receipts
 * are in, each task turns terminal exactly once, its loan comes back exactly once, and the
 * ledger's counters always equal the sum over its tasks. With a watchdog firing part-way, an
 * UNQUIESCED task keeps its loan until its last late receipt, and its reported outcome never
 * changes.
 */
class TaskLedgerSpec extends AnyFlatSpec with PropertySupport {
  import TaskLedgerSpec._

  override protected def cases: Int = 300

  private val genTask: Gen[TaskPlan] = for {
    length <- Gen.chooseNum(1L, 1L << 22)
    frames <- Gen.choose(1, 5)
    cuts <- Gen.listOfN(frames - 1, Gen.chooseNum(0L, length))
    failing <- Gen.listOfN(frames, Gen.prob(0.08))
    unsent <- Gen.prob(0.05)
    write <- Gen.prob(0.5)
  } yield {
    val bounds = (0L +: cuts.sorted :+ length).toVector
    val bytes = bounds.sliding(2).map(p => p(1) - p(0)).toVector
    TaskPlan(length, bytes, failing.toVector, unsent, write)
  }

  private val genCase: Gen[(Vector[TaskPlan], Long, Option[Double])] = for {
    n <- Gen.choose(1, 40)
    tasks <- Gen.listOfN(n, genTask)
    seed <- Gen.long
    watchdog <- Gen.option(Gen.choose(0.0, 1.0))
  } yield (tasks.toVector, seed, watchdog)

  "the ledger" should "end each task once, after its count and its receipts, returning its loan once" in {
    forAll(genCase) { case (tasks, seed, watchdogAt) =>
      val region = loanOnlyRegistration()
      val ledger = new TaskLedger(tasks.size)
      val deadline = System.nanoTime() + 3_600_000_000_000L
      val idx = tasks.map { t =>
        region.tryLoan() shouldBe true
        ledger.add(if (t.write) Op.WRITE else Op.READ, t.length, region, deadline, System.nanoTime())
      }
      // Events: per sent task, its count and each receipt, shuffled together across all tasks.
      val rnd = new scala.util.Random(seed)
      val events = rnd.shuffle(tasks.indices.filterNot(k => tasks(k).unsent).flatMap { k =>
        Owe(k) +: tasks(k).bytes.indices.map(f => Frame(k, f))
      }.toVector)
      val quarantineAt = watchdogAt.map(p => (p * events.size).toInt)
      val st = Array.fill(tasks.size)(new Progress)
      var quarantinedTasks = Set.empty[Int]

      // Tasks that never reached a worker fail at once and owe nothing.
      for (k <- tasks.indices if tasks(k).unsent) {
        ledger.failUnsent(idx(k), ErrorKind.UNAVAILABLE, "never sent")
        st(k).ended = true
      }
      check(tasks, idx, st, ledger, region, quarantinedTasks)

      for ((e, at) <- events.zipWithIndex) {
        if (quarantineAt.contains(at)) {
          // The watchdog: every task still owed something turns UNQUIESCED (a deadline long past).
          val n = ledger.quarantineOverdue(deadline + 10L * 3_600_000_000_000L, 0L, "test watchdog")
          val overdue = tasks.indices.filter(k => !st(k).ended && !st(k).done(tasks(k)))
          n shouldBe overdue.size
          quarantinedTasks = overdue.toSet
        }
        val k = e.task
        val outcome = e match {
          case Owe(_) =>
            st(k).counted = true
            ledger.owe(idx(k), tasks(k).bytes.size)
          case Frame(_, f) =>
            st(k).receipts += 1
            val t = tasks(k)
            if (t.failing(f)) {
              ledger.apply(idx(k), 0L, ErrorKind.PEER_LOST, RemoteEffect.NONE, "frame " + f + " lost", System.nanoTime())
            } else {
              ledger.apply(idx(k), t.bytes(f), null,
                if (t.write) RemoteEffect.APPLIED else RemoteEffect.NONE, "", System.nanoTime())
            }
        }
        val nowDone = st(k).done(tasks(k))
        if (quarantinedTasks.contains(k)) {
          outcome shouldBe (if (nowDone) TaskLedger.Outcome.LATE_DRAINED else TaskLedger.Outcome.NONE)
        } else {
          withClue(s"task $k after $e: ") {
            outcome shouldBe (if (nowDone) TaskLedger.Outcome.FINISHED else TaskLedger.Outcome.NONE)
          }
          if (nowDone) st(k).ended = true
        }
        check(tasks, idx, st, ledger, region, quarantinedTasks)
      }
      ledger.pending() shouldBe 0
      ledger.held() shouldBe 0
      region.loans() shouldBe 0
      ledger.loansHeld() shouldBe 0
    }
  }

  /**
   * A registration used for its loan count alone. Built reflectively: scalac compiles against the
   * Java 17 API, where the MemorySegment of Registration's constructors does not exist.
   */
  private def loanOnlyRegistration(): Registration = {
    val ctor = classOf[Registration].getConstructors.find(_.getParameterCount == 4)
      .getOrElse(fail("Registration has no 4-argument constructor"))
    ctor.newInstance(java.lang.Long.valueOf(1L), null, Access.READ_WRITE, null).asInstanceOf[Registration]
  }

  /** The invariants, after every event. */
  private def check(tasks: Vector[TaskPlan], idx: Vector[Int], st: Array[Progress], ledger: TaskLedger,
      region: Registration, quarantined: Set[Int]): Unit = {
    var pending = 0
    var pendingBytes = 0L
    var held = 0
    var loans = 0
    var owed = 0L
    for (k <- tasks.indices) {
      val t = tasks(k)
      val r = ledger.result(idx(k))
      val done = st(k).done(t)
      if (st(k).counted) owed += t.bytes.size
      owed -= st(k).receipts
      if (quarantined.contains(k)) {
        r.state() shouldBe TaskState.UNQUIESCED
        r.bytes() shouldBe 0L
        r.locallyDrained() shouldBe done
        if (!done) { held += 1; loans += 1 }
      } else if (!st(k).ended) {
        withClue(s"task $k, counted ${st(k).counted}, ${st(k).receipts} of ${t.bytes.size} receipts: ") {
          r.state() shouldBe TaskState.PENDING
        }
        pending += 1
        pendingBytes += t.length
        loans += 1
      } else if (t.unsent) {
        r.state() shouldBe TaskState.FAILED
        r.errorKind() shouldBe ErrorKind.UNAVAILABLE
      } else {
        val failed = t.failing.contains(true)
        r.state() shouldBe (if (failed) TaskState.FAILED else TaskState.COMPLETED)
        r.bytes() shouldBe (if (failed) 0L else t.length)
        r.locallyDrained() shouldBe true
        if (failed) r.errorKind() shouldBe ErrorKind.PEER_LOST
        else r.remoteEffect() shouldBe (if (t.write) RemoteEffect.APPLIED else RemoteEffect.NONE)
      }
    }
    ledger.pending() shouldBe pending
    ledger.pendingBytes() shouldBe pendingBytes
    ledger.held() shouldBe held
    ledger.loansHeld() shouldBe loans
    region.loans() shouldBe loans.toLong
    ledger.owedReceipts() shouldBe owed
  }
}

object TaskLedgerSpec {
  /** One task: its length, the bytes of each of its frames, which frames fail, whether it is sent. */
  final case class TaskPlan(length: Long, bytes: Vector[Long], failing: Vector[Boolean], unsent: Boolean, write: Boolean)

  sealed trait Event { def task: Int }
  final case class Owe(task: Int) extends Event
  final case class Frame(task: Int, frame: Int) extends Event

  /** What the spec has sent the ledger for one task. */
  final class Progress {
    var counted = false
    var receipts = 0
    var ended = false
    def done(t: TaskPlan): Boolean = counted && receipts == t.bytes.size
  }
}
