package io.orbite.engine.wire

import io.orbite.engine.PropertySupport
import io.orbite.engine.wire.FrameRejectedException.Reason
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets
import org.scalacheck.{Arbitrary, Gen}
import org.scalatest.propspec.AnyPropSpec
import scala.collection.mutable

/**
 * Properties of the 56-byte frame header: the layout is written and read where the doc says,
 * valid headers of every type survive encode -> check -> decode, and every rule of `check`
 * rejects with its own reason, at any absolute offset, without moving the buffer.
 *
 * The expected bytes and verdicts are computed here from the documented layout (big-endian,
 * byte by byte), not through `ByteBuffer`, so a wrong offset, width or byte order in the codec
 * shows up as a mismatch.
 */
class FrameCodecSpec extends AnyPropSpec with PropertySupport {
  import FrameCodecSpec._

  private val MagicBytes = "ORBT".getBytes(StandardCharsets.US_ASCII)
  private val Types: Seq[FrameType] = FrameType.values().toSeq
  private val KnownCodes: Set[Int] = Types.map(_.code()).toSet
  private val UnknownCodes: Seq[Int] = (0 to 255).filterNot(KnownCodes)

  private def fieldsOf(h: FrameHeader): Fields =
    Fields(FrameCodec.MAGIC, 1, h.`type`().code(), h.status(), h.payloadLength(), h.requestId(), h.epoch(),
      h.regionId(), h.offset(), h.count())

  private val genPlacement: Gen[Placement] = for {
    kind <- Gen.choose(0, 2)
    before <- Gen.frequency(2 -> Gen.const(0), 5 -> Gen.choose(1, 100), 1 -> Gen.choose(1000, 5000))
    after <- Gen.frequency(2 -> Gen.const(0), 5 -> Gen.choose(1, 100))
    position <- Gen.choose(0, before + Header + after)
    seed <- Arbitrary.arbitrary[Long]
  } yield Placement(kind, before, after, position, seed)

  private def snapshot(buf: ByteBuffer): Vector[Byte] = Vector.tabulate(buf.capacity())(buf.get)

  /** Runs `body` and asserts it left position and limit alone, whether it returned or threw. */
  private def keepsPosition[T](buf: ByteBuffer)(body: => T): T = {
    val (position, limit) = (buf.position(), buf.limit())
    try body
    finally {
      withClue("position moved: ")(buf.position() shouldBe position)
      withClue("limit moved: ")(buf.limit() shouldBe limit)
    }
  }

  private def rejected(buf: ByteBuffer, at: Int, available: Int, cap: Long): Reason =
    keepsPosition(buf) {
      intercept[FrameRejectedException](FrameCodec.check(buf, at, available, cap)).reason()
    }

  // ---------------------------------------------------------------------------------------------
  // Valid headers, type by type

  private val anyLong = Arbitrary.arbitrary[Long]

  /** A HELLO's payload (the requester's identity) has its own cap, whatever the receiver's. */
  private val HelloCap: Long = EngineIdentity.MAX_BYTES.toLong

  /** A NOTIFY (identity, tag, bytes) and a NOTIFY_ACK (a refusal's detail) have their own caps too. */
  private val NotifyCap: Long = NotifyCodec.MAX_PAYLOAD_BYTES
  private val MaxHead: Long = NotifyCodec.MAX_HEAD_BYTES.toLong
  private val AckCap: Long = NotifyCodec.MAX_DETAIL_BYTES.toLong

  /** The authentication frames (AUTH_HELLO to AUTH_RESULT) are bounded on their own too. */
  private val AuthCap: Long = FrameCodec.MAX_AUTH_PAYLOAD_BYTES.toLong

  private val AuthTypes: Set[FrameType] =
    Set(FrameType.AUTH_HELLO, FrameType.AUTH_CHALLENGE, FrameType.AUTH_PROOF, FrameType.AUTH_RESULT)

  private def capOf(t: FrameType, cap: Long): Long = t match {
    case t if AuthTypes(t) => AuthCap
    case FrameType.HELLO => HelloCap
    case FrameType.NOTIFY => NotifyCap
    case FrameType.NOTIFY_ACK => AckCap
    case _ => cap
  }
  private val genStatus: Gen[Int] = Gen.frequency(2 -> Gen.const(0), 3 -> Gen.chooseNum(1, 0xffff))

  /** Receiver caps: at least 1 so every type has a valid header, sometimes without limit. */
  private val genCap: Gen[Long] =
    Gen.frequency(1 -> Gen.const(1L), 6 -> Gen.chooseNum(1L, 1L << 40), 1 -> Gen.const(Long.MaxValue))

  private def genValid(t: FrameType, cap: Long): Gen[FrameHeader] = for {
    status <- genStatus
    requestId <- anyLong
    epoch <- anyLong
    regionId <- anyLong
    offset <- anyLong
    anyCount <- anyLong
    inCap <- Gen.chooseNum(1L, cap)
    upToCap <- Gen.chooseNum(0L, cap)
    head <- Gen.chooseNum(0L, MaxHead)
    notifyCount <- Gen.chooseNum(0L, NotifyCap - MaxHead)
    detail <- Gen.chooseNum(0L, AckCap)
  } yield {
    val (payload, count) = t match {
      case FrameType.READ_REQUEST => (0L, inCap)
      case FrameType.WRITE_REQUEST => (inCap, inCap)
      case FrameType.READ_RESPONSE => if (status == 0) (upToCap, upToCap) else (0L, anyCount)
      case FrameType.DESCRIBE_RESPONSE => (upToCap, anyCount)
      case FrameType.HELLO => (upToCap.min(HelloCap), anyCount) // its identity, within its own cap
      case t if AuthTypes(t) => (upToCap.min(AuthCap), anyCount) // fields checked as decoded
      case FrameType.NOTIFY => (head + notifyCount, notifyCount) // a bounded head, then the bytes
      case FrameType.NOTIFY_ACK => if (status == 0) (0L, anyCount) else (detail, anyCount)
      case _ => (0L, anyCount) // WRITE_ACK, HELLO_ACK, DESCRIBE_REQUEST, KEEPALIVE, KEEPALIVE_ACK
    }
    new FrameHeader(t, status, payload, requestId, epoch, regionId, offset, count)
  }

  private def genValidCase(t: FrameType): Gen[(FrameHeader, Long, Placement)] = for {
    cap <- genCap
    h <- genValid(t, cap)
    p <- genPlacement
  } yield (h, cap, p)

  private val genAnyValidCase: Gen[(FrameHeader, Long, Placement)] =
    Gen.oneOf(Types).flatMap(genValidCase)

  // ---------------------------------------------------------------------------------------------
  // Round trip

  for (t <- Types) {
    property(s"a valid $t header survives encode -> check -> decode at any offset, in the documented layout") {
      forAll(genValidCase(t)) { case (h, cap, p) =>
        val buf = p.fresh()
        val before = snapshot(buf)
        keepsPosition(buf)(FrameCodec.encode(buf, p.at, h))

        val after = snapshot(buf)
        withClue("encode wrote outside its 56 bytes: ") {
          (after.take(p.at) ++ after.drop(p.at + Header)) shouldBe (before.take(p.at) ++ before.drop(p.at + Header))
        }
        after.slice(p.at, p.at + 4) shouldBe MagicBytes.toVector
        after.slice(p.at, p.at + Header) shouldBe fieldsOf(h).bytes.toVector

        // Exactly the header, or the header followed by more bytes (payload or the next frame).
        keepsPosition(buf)(FrameCodec.check(buf, p.at, Header, cap)) shouldBe true
        keepsPosition(buf)(FrameCodec.check(buf, p.at, Header + p.after, cap)) shouldBe true
        keepsPosition(buf)(FrameCodec.decode(buf, p.at)) shouldBe h

        // Reading needs no write access.
        FrameCodec.decode(buf.asReadOnlyBuffer(), p.at) shouldBe h
        snapshot(buf) shouldBe after
      }
    }
  }

  property("the field-wise encode and the FrameHeader encode write the same bytes") {
    forAll(genAnyValidCase) { case (h, _, p) =>
      val a = p.fresh()
      val b = p.fresh()
      FrameCodec.encode(a, p.at, h)
      FrameCodec.encode(b, p.at, h.`type`(), h.status(), h.payloadLength(), h.requestId(), h.epoch(), h.regionId(),
        h.offset(), h.count())
      snapshot(a) shouldBe snapshot(b)
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Need more bytes

  property("a correct magic prefix shorter than 56 bytes asks for more bytes and never throws, whatever follows") {
    val gen = for {
      p <- genPlacement
      available <- Gen.frequency(1 -> Gen.choose(0, 3), 3 -> Gen.choose(0, Header - 1))
      rest <- Gen.listOfN(Header, Arbitrary.arbitrary[Byte])
      cap <- Gen.chooseNum(0L, Long.MaxValue)
    } yield (p, available, rest, cap)
    forAll(gen) { case (p, available, rest, cap) =>
      // The magic's first min(available, 4) bytes, then anything at all (bad version, type, lengths).
      val header = rest.toArray
      MagicBytes.indices.take(available).foreach(i => header(i) = MagicBytes(i))
      val buf = p.holding(header)
      val result = keepsPosition(buf) {
        noException should be thrownBy FrameCodec.check(buf, p.at, available, cap)
        FrameCodec.check(buf, p.at, available, cap)
      }
      result shouldBe false
    }
  }

  property("every proper prefix of a valid header asks for more bytes") {
    forAll(genAnyValidCase, Gen.choose(0, Header - 1)) { case ((h, cap, p), available) =>
      val buf = p.fresh()
      FrameCodec.encode(buf, p.at, h)
      keepsPosition(buf)(FrameCodec.check(buf, p.at, available, cap)) shouldBe false
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Rejections

  property("any first four bytes other than the magic are FOREIGN_MAGIC, even with fewer than 56 bytes") {
    val gen = for {
      magic <- Arbitrary.arbitrary[Int].suchThat(_ != FrameCodec.MAGIC)
      (h, cap, p) <- genAnyValidCase
      available <- Gen.frequency(1 -> Gen.choose(4, Header - 1), 1 -> Gen.choose(Header, Header + p.after))
    } yield (magic, h, cap, p, available)
    forAll(gen) { case (magic, h, cap, p, available) =>
      val header = fieldsOf(h).copy(magic = magic).bytes
      rejected(p.holding(header), p.at, available, cap) shouldBe Reason.FOREIGN_MAGIC
    }
  }

  property("a magic that differs from ORBT in a single byte is FOREIGN_MAGIC") {
    val gen = for {
      (h, cap, p) <- genAnyValidCase
      index <- Gen.choose(0, 3)
      flip <- Gen.choose(1, 255)
      available <- Gen.choose(4, Header)
    } yield (h, cap, p, index, flip, available)
    forAll(gen) { case (h, cap, p, index, flip, available) =>
      val header = fieldsOf(h).bytes
      header(index) = (header(index) ^ flip).toByte
      rejected(p.holding(header), p.at, available, cap) shouldBe Reason.FOREIGN_MAGIC
    }
  }

  property("a 1..3-byte prefix that differs from the magic's prefix is FOREIGN_MAGIC at once") {
    val gen = for {
      p <- genPlacement
      n <- Gen.choose(1, 3)
      prefix <- Gen.listOfN(n, Arbitrary.arbitrary[Byte])
      wrong <- Gen.choose(0, n - 1)
      flip <- Gen.choose(1, 255)
      cap <- genCap
    } yield (p, n, prefix, wrong, flip, cap)
    forAll(gen) { case (p, n, prefix, wrong, flip, cap) =>
      // Bytes before `wrong` may or may not match; the one at `wrong` certainly does not.
      val bytes = prefix.toArray
      bytes(wrong) = (MagicBytes(wrong) ^ flip).toByte
      // What lies beyond the available bytes is the real magic: it must not be looked at.
      val header = bytes ++ MagicBytes.drop(n)
      rejected(p.holding(header), p.at, n, cap) shouldBe Reason.FOREIGN_MAGIC
    }
  }

  property("a version other than 1 is UNSUPPORTED_VERSION") {
    val gen = for {
      version <- Gen.choose(0, 255).suchThat(_ != FrameCodec.VERSION)
      (h, cap, p) <- genAnyValidCase
    } yield (version, h, cap, p)
    forAll(gen) { case (version, h, cap, p) =>
      rejected(p.holding(fieldsOf(h).copy(version = version).bytes), p.at, Header, cap) shouldBe
        Reason.UNSUPPORTED_VERSION
    }
  }

  property("a type code that names no FrameType is UNKNOWN_TYPE") {
    val gen = for {
      code <- Gen.oneOf(UnknownCodes)
      (h, cap, p) <- genAnyValidCase
    } yield (code, h, cap, p)
    forAll(gen) { case (code, h, cap, p) =>
      FrameType.fromCode(code) shouldBe null
      rejected(p.holding(fieldsOf(h).copy(typeCode = code).bytes), p.at, Header, cap) shouldBe Reason.UNKNOWN_TYPE
    }
  }

  property("a payload length above the cap or negative is ABSURD_LENGTH, whatever the type") {
    val gen = for {
      (h, _, p) <- genAnyValidCase
      cap <- Gen.chooseNum(0L, Long.MaxValue - 1)
      payload <- Gen.oneOf(Gen.chooseNum(cap + 1, Long.MaxValue), Gen.chooseNum(Long.MinValue, -1L))
      count <- Gen.oneOf(Gen.const(payload), anyLong)
    } yield (h, cap, p, payload, count)
    forAll(gen) { case (h, cap, p, payload, count) =>
      whenever(payload < 0 || payload > capOf(h.`type`(), cap)) {
        val header = fieldsOf(h).copy(payload = payload, count = count).bytes
        rejected(p.holding(header), p.at, Header, cap) shouldBe Reason.ABSURD_LENGTH
      }
    }
  }

  /** (status, payload, count) triples that break the per-type rule, with the payload within the cap. */
  private def genInconsistent(t: FrameType, cap: Long): Gen[(Int, Long, Long)] = {
    val inCap = Gen.chooseNum(1L, cap)
    val upToCap = Gen.chooseNum(0L, cap)
    val nonPositive = Gen.chooseNum(Long.MinValue, 0L)
    t match {
      case FrameType.READ_REQUEST =>
        val beyondCap =
          if (cap == Long.MaxValue) nonPositive else Gen.chooseNum(cap + 1, Long.MaxValue)
        Gen.oneOf(
          for (s <- genStatus; pl <- inCap; c <- inCap) yield (s, pl, c), // a read carries no payload
          for (s <- genStatus; c <- nonPositive) yield (s, 0L, c), // nothing to read
          for (s <- genStatus; c <- beyondCap) yield (s, 0L, c) // an answer the reader would refuse
        )
      case FrameType.WRITE_REQUEST =>
        Gen.oneOf(
          for (s <- genStatus; pl <- upToCap; c <- nonPositive) yield (s, pl, c),
          for (s <- genStatus; pl <- upToCap; c <- anyLong.suchThat(_ != pl)) yield (s, pl, c)
        )
      case FrameType.READ_RESPONSE =>
        Gen.oneOf(
          for (pl <- upToCap; c <- anyLong.suchThat(_ != pl)) yield (0, pl, c), // OK must carry count bytes
          for (s <- Gen.chooseNum(1, 0xffff); pl <- inCap; c <- anyLong) yield (s, pl, c) // a refusal carries none
        )
      case FrameType.DESCRIBE_RESPONSE | FrameType.HELLO =>
        throw new IllegalArgumentException(s"every in-cap $t is consistent")
      case FrameType.NOTIFY =>
        Gen.oneOf(
          for (s <- genStatus; pl <- Gen.chooseNum(0L, NotifyCap); c <- Gen.chooseNum(Long.MinValue, -1L))
            yield (s, pl, c), // a negative count
          for (s <- genStatus; pl <- Gen.chooseNum(0L, NotifyCap - 1); c <- Gen.chooseNum(pl + 1, Long.MaxValue))
            yield (s, pl, c), // more bytes than the payload holds
          for (s <- genStatus; pl <- Gen.chooseNum(MaxHead + 1, NotifyCap); c <- Gen.chooseNum(0L, pl - MaxHead - 1))
            yield (s, pl, c) // a head over its bound
        )
      case FrameType.NOTIFY_ACK =>
        for (pl <- Gen.chooseNum(1L, AckCap); c <- anyLong) yield (0, pl, c) // an acceptance carries no detail
      case _ => // WRITE_ACK, HELLO_ACK, DESCRIBE_REQUEST, KEEPALIVE, KEEPALIVE_ACK: never a payload
        for (s <- genStatus; pl <- inCap; c <- anyLong) yield (s, pl, c)
    }
  }

  for (t <- Types if t != FrameType.DESCRIBE_RESPONSE && t != FrameType.HELLO && !AuthTypes(t)) {
    property(s"a $t whose lengths break its rule is INCONSISTENT_LENGTH") {
      val gen = for {
        (h, cap, p) <- genValidCase(t)
        (status, payload, count) <- genInconsistent(t, cap)
      } yield (h, cap, p, status, payload, count)
      forAll(gen) { case (h, cap, p, status, payload, count) =>
        val header = fieldsOf(h).copy(status = status, payload = payload, count = count).bytes
        rejected(p.holding(header), p.at, Header, cap) shouldBe Reason.INCONSISTENT_LENGTH
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Any header: check agrees with the documented rules, including which rule is reported first

  /** The documented rules, in their documented order, over the raw bytes. */
  private def expected(f: Fields, available: Int, cap: Long): Verdict = {
    val bytes = f.bytes
    if (available < 4) {
      if (bytes.take(available).sameElements(MagicBytes.take(available))) NeedMore else Reject(Reason.FOREIGN_MAGIC)
    } else if (!bytes.take(4).sameElements(MagicBytes)) Reject(Reason.FOREIGN_MAGIC)
    else if (available < Header) NeedMore
    else if (f.version != 1) Reject(Reason.UNSUPPORTED_VERSION)
    else if (!KnownCodes(f.typeCode)) Reject(Reason.UNKNOWN_TYPE)
    else if (f.payload < 0 || f.payload > capOf(FrameType.fromCode(f.typeCode), cap)) Reject(Reason.ABSURD_LENGTH)
    else {
      val consistent = FrameType.fromCode(f.typeCode) match {
        case FrameType.READ_REQUEST => f.payload == 0 && f.count > 0 && f.count <= cap
        case FrameType.WRITE_REQUEST => f.count > 0 && f.payload == f.count
        case FrameType.READ_RESPONSE => if (f.status == 0) f.payload == f.count else f.payload == 0
        case FrameType.DESCRIBE_RESPONSE | FrameType.HELLO => true
        case t if AuthTypes(t) => true
        case FrameType.NOTIFY => f.count >= 0 && f.count <= f.payload && f.payload - f.count <= MaxHead
        case FrameType.NOTIFY_ACK => f.status != 0 || f.payload == 0
        case _ => f.payload == 0
      }
      if (consistent) Accept else Reject(Reason.INCONSISTENT_LENGTH)
    }
  }

  private val genAnyFields: Gen[(Fields, Long)] = for {
    cap <- Gen.frequency(1 -> Gen.const(0L), 6 -> Gen.chooseNum(1L, 1L << 40), 1 -> Gen.const(Long.MaxValue))
    magic <- Gen.frequency(12 -> Gen.const(FrameCodec.MAGIC), 1 -> Arbitrary.arbitrary[Int])
    version <- Gen.frequency(12 -> Gen.const(1), 1 -> Gen.choose(0, 255))
    typeCode <- Gen.frequency(12 -> Gen.oneOf(KnownCodes.toSeq), 1 -> Gen.choose(0, 255))
    status <- genStatus
    interesting = Gen.oneOf(Seq(0L, 1L, -1L, cap, cap + 1, Long.MinValue, Long.MaxValue))
    count <- Gen.frequency(3 -> Gen.chooseNum(0L, cap), 2 -> interesting, 1 -> anyLong)
    payload <- Gen.frequency(3 -> Gen.const(0L), 3 -> Gen.const(count), 2 -> Gen.chooseNum(0L, cap), 2 -> interesting)
    requestId <- anyLong
    epoch <- anyLong
    regionId <- anyLong
    offset <- anyLong
  } yield (Fields(magic, version, typeCode, status, payload, requestId, epoch, regionId, offset, count), cap)

  property("check agrees with the documented rules on arbitrary headers, and reports the first rule broken") {
    val seen = mutable.Map.empty[Verdict, Int].withDefaultValue(0)
    val gen = for {
      (f, cap) <- genAnyFields
      p <- genPlacement
      available <- Gen.frequency(1 -> Gen.choose(0, Header - 1), 6 -> Gen.choose(Header, Header + p.after))
    } yield (f, cap, p, available)
    forAll(gen, minSuccessful(2000)) { case (f, cap, p, available) =>
      val buf = p.holding(f.bytes)
      val actual = keepsPosition(buf) {
        try if (FrameCodec.check(buf, p.at, available, cap)) Accept else NeedMore
        catch { case e: FrameRejectedException => Reject(e.reason()) }
      }
      val want = expected(f, available, cap)
      actual shouldBe want
      seen(want) += 1
      if (want == Accept) {
        keepsPosition(buf)(FrameCodec.decode(buf, p.at)) shouldBe new FrameHeader(FrameType.fromCode(f.typeCode),
          f.status, f.payload, f.requestId, f.epoch, f.regionId, f.offset, f.count)
      }
    }
    // The generator must have reached every outcome, or the property proves less than it says.
    val outcomes: Set[Verdict] =
      Set(NeedMore, Accept) ++ Set(Reason.FOREIGN_MAGIC, Reason.UNSUPPORTED_VERSION, Reason.UNKNOWN_TYPE,
        Reason.ABSURD_LENGTH, Reason.INCONSISTENT_LENGTH).map(Reject(_))
    withClue(s"outcomes seen: $seen: ")(seen.keySet shouldBe outcomes)
  }

  property("FrameType codes are stable and fromCode inverts code, null for the rest") {
    Types.map(t => t -> t.code()) shouldBe Seq(
      FrameType.DESCRIBE_REQUEST -> 1, FrameType.DESCRIBE_RESPONSE -> 2, FrameType.HELLO -> 3,
      FrameType.HELLO_ACK -> 4, FrameType.READ_REQUEST -> 5, FrameType.READ_RESPONSE -> 6,
      FrameType.WRITE_REQUEST -> 7, FrameType.WRITE_ACK -> 8, FrameType.KEEPALIVE -> 9,
      FrameType.KEEPALIVE_ACK -> 10, FrameType.NOTIFY -> 11, FrameType.NOTIFY_ACK -> 12,
      FrameType.AUTH_HELLO -> 13, FrameType.AUTH_CHALLENGE -> 14, FrameType.AUTH_PROOF -> 15,
      FrameType.AUTH_RESULT -> 16)
    forAll(Gen.chooseNum(Int.MinValue, Int.MaxValue)) { code =>
      val t = FrameType.fromCode(code)
      if (code >= 1 && code <= 16) t.code() shouldBe code else t shouldBe null
    }
  }
}

object FrameCodecSpec {
  private val Header = FrameCodec.HEADER_BYTES

  // Raw header fields and their documented big-endian layout

  /** Every field of a header, including those a valid header fixes (magic, version). */
  final case class Fields(
      magic: Int,
      version: Int,
      typeCode: Int,
      status: Int,
      payload: Long,
      requestId: Long,
      epoch: Long,
      regionId: Long,
      offset: Long,
      count: Long) {
    def bytes: Array[Byte] =
      be(magic.toLong, 4) ++ be(version.toLong, 1) ++ be(typeCode.toLong, 1) ++ be(status.toLong, 2) ++
        be(payload, 8) ++ be(requestId, 8) ++ be(epoch, 8) ++ be(regionId, 8) ++ be(offset, 8) ++ be(count, 8)
  }

  /** The low `width` bytes of `v`, most significant first. */
  def be(v: Long, width: Int): Array[Byte] =
    Array.tabulate(width)(i => (v >>> (8 * (width - 1 - i))).toByte)

  // Where the header lies: a bigger buffer of some kind, junk around it, some position

  /**
   * A buffer with `before` junk bytes, room for a header at index `before`, and `after` junk
   * bytes; its position is set to `position`. `kind` is heap, direct, or a heap slice whose
   * backing array has an offset (so absolute indexes are not array indexes).
   */
  final case class Placement(kind: Int, before: Int, after: Int, position: Int, seed: Long) {
    def at: Int = before
    def capacity: Int = before + Header + after

    def fresh(): ByteBuffer = {
      val rnd = new scala.util.Random(seed)
      val junk = Array.fill(capacity)(rnd.nextInt().toByte)
      val buf = kind match {
        case 0 => ByteBuffer.wrap(junk)
        case 1 => ByteBuffer.allocateDirect(capacity).put(junk).clear()
        case _ =>
          val outer = ByteBuffer.wrap(new Array[Byte](capacity + 13))
          outer.position(13).slice().put(junk).clear()
      }
      buf.position(position)
    }

    /** A fresh buffer holding `header` (at most 56 bytes) at `at`. */
    def holding(header: Array[Byte]): ByteBuffer = {
      val buf = fresh()
      header.indices.foreach(i => buf.put(at + i, header(i)))
      buf
    }
  }

  sealed trait Verdict
  case object NeedMore extends Verdict
  case object Accept extends Verdict
  final case class Reject(reason: Reason) extends Verdict
}
