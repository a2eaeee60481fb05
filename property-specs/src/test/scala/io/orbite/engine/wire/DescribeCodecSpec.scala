package io.orbite.engine.wire

import io.orbite.engine.{Access, PropertySupport, RemoteRegion}
import io.orbite.engine.wire.FrameRejectedException.Reason
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8
import org.scalacheck.{Arbitrary, Gen}
import org.scalatest.propspec.AnyPropSpec
import scala.jdk.CollectionConverters._

/**
 * Properties of the DESCRIBE_RESPONSE payload: descriptions survive a round trip in the documented
 * layout, and anything but a whole, exact encoding is refused with a FrameRejectedException (never
 * a BufferUnderflowException, IllegalArgumentException or other escape). The tagged parts after
 * the SHM part are the one allowance: an answer without them is an older engine's (no limits), and
 * a part of a tag this engine does not know is skipped whole. The parts of tags 2..4 (the engine's
 * name, region names, not ready) survive a round trip with the rest.
 */
class DescribeCodecSpec extends AnyPropSpec with PropertySupport {
  private val anyLong = Arbitrary.arbitrary[Long]

  /** Unicode scalar values of every UTF-8 width (1 to 4 bytes); no lone surrogates. */
  private val genCodePoint: Gen[Int] = Gen.frequency(
    5 -> Gen.choose(0x20, 0x7e), // what host names usually are
    1 -> Gen.choose(0x00, 0x7f),
    2 -> Gen.choose(0x80, 0x7ff),
    2 -> Gen.oneOf(Gen.choose(0x800, 0xd7ff), Gen.choose(0xe000, 0xffff)),
    1 -> Gen.choose(0x10000, 0x10ffff))

  private def utf8Length(s: String): Int = s.getBytes(UTF_8).length

  /** A host of exactly `bytes` UTF-8 bytes, mixing code point widths. */
  private def genHostOf(bytes: Int): Gen[String] =
    Gen.listOfN(bytes, genCodePoint).map { cps =>
      val sb = new java.lang.StringBuilder
      var used = 0
      cps.foreach { cp =>
        val width = utf8Length(new String(Character.toChars(cp)))
        if (used + width <= bytes) { sb.appendCodePoint(cp); used += width }
      }
      while (used < bytes) { sb.append('h'); used += 1 }
      sb.toString
    }

  private val genHost: Gen[String] =
    Gen.chooseNum(1, DescribeCodec.MAX_HOST_BYTES).flatMap(genHostOf)

  private val genRegion: Gen[RemoteRegion] = for {
    id <- anyLong
    length <- Gen.chooseNum(1L, Long.MaxValue)
    access <- Gen.oneOf(Access.values().toSeq)
  } yield new RemoteRegion(id, length, access)

  private val genDescription: Gen[Description] = for {
    host <- genHost
    port <- Gen.chooseNum(1, 65535)
    epoch <- anyLong
    n <- Gen.frequency(1 -> Gen.const(0), 2 -> Gen.choose(1, 5), 3 -> Gen.choose(0, 200), 1 -> Gen.const(200))
    regions <- Gen.listOfN(n, genRegion).map(_.groupBy(_.regionId()).values.map(_.head).toList)
    shared <- Gen.frequency(1 -> Gen.const(None), 1 -> genShared(regions).map(Some(_)))
    limits <- Gen.frequency(1 -> Gen.const(None), 2 -> genLimits.map(Some(_)))
  } yield new Description(host, port, epoch, regions.asJava, shared.orNull, limits.orNull)

  /** The limits part: any positive frame payload and transfer limits. */
  private val genLimits: Gen[TransferLimits] = for {
    frame <- Gen.chooseNum(1, Int.MaxValue)
    transfer <- Gen.chooseNum(1L, Long.MaxValue)
  } yield new TransferLimits(frame, transfer)

  /** An SHM part exporting a subset of `regions`, each exactly as published. */
  private def genShared(regions: List[RemoteRegion]): Gen[SharedExports] = for {
    hostname <- Gen.chooseNum(1, 64).flatMap(genHostOf)
    boot <- Gen.uuid.map(_.toString)
    pid <- Gen.chooseNum(1, Int.MaxValue)
    tokenFd <- Gen.chooseNum(0, Int.MaxValue)
    tokenInode <- anyLong
    picked <- Gen.someOf(regions)
    fds <- Gen.listOfN(picked.size, Gen.chooseNum(0, Int.MaxValue))
    inodes <- Gen.listOfN(picked.size, anyLong)
  } yield new SharedExports(new SharedHost(hostname, boot, pid, tokenFd, tokenInode),
    picked.toList.zip(fds.zip(inodes)).map { case (r, (fd, ino)) =>
      new SharedRegion(r.regionId(), fd, ino, 0L, r.lengthBytes(), r.access())
    }.asJava)

  private def bytesOf(buf: ByteBuffer): Array[Byte] = {
    val out = new Array[Byte](buf.remaining())
    buf.duplicate().get(out)
    out
  }

  private def encoded(d: Description): Array[Byte] = bytesOf(DescribeCodec.encode(d))

  /** Decodes exactly `bytes`, as a payload read off the wire. */
  private def decode(bytes: Array[Byte]): Description = DescribeCodec.decode(ByteBuffer.wrap(bytes))

  /** The documented layout, written byte by byte, big-endian. */
  private def layout(d: Description): Array[Byte] = {
    def be(v: Long, width: Int) = Array.tabulate(width)(i => (v >>> (8 * (width - 1 - i))).toByte)
    val host = d.host().getBytes(UTF_8)
    be(host.length.toLong, 2) ++ host ++ be(d.port().toLong, 4) ++ be(d.epoch(), 8) ++
      be(d.regions().size().toLong, 4) ++
      d.regions().asScala.flatMap(r => be(r.regionId(), 8) ++ be(r.lengthBytes(), 8) ++ be(r.access().code().toLong, 1)) ++
      sharedLayout(d) ++ limitsLayout(d)
  }

  /** The limits part when there are limits: tag 1, body length 12, frame payload, transfer. */
  private def limitsLayout(d: Description): Array[Byte] = {
    def be(v: Long, width: Int) = Array.tabulate(width)(i => (v >>> (8 * (width - 1 - i))).toByte)
    Option(d.limits()) match {
      case None => Array[Byte]()
      case Some(l) =>
        be(DescribeCodec.LIMITS_TAG.toLong, 1) ++ be(DescribeCodec.LIMITS_BYTES.toLong, 2) ++
          be(l.tcpFramePayloadBytes().toLong, 4) ++ be(l.maxTransferBytes(), 8)
    }
  }

  /** A tagged part of `tag` with `body`. */
  private def part(tag: Int, body: Array[Byte]): Array[Byte] =
    Array(tag.toByte, (body.length >>> 8).toByte, body.length.toByte) ++ body

  /** The SHM part: a flag byte, then (when present) host, boot id, pid, token, and the exports. */
  private def sharedLayout(d: Description): Array[Byte] = {
    def be(v: Long, width: Int) = Array.tabulate(width)(i => (v >>> (8 * (width - 1 - i))).toByte)
    Option(d.shared()) match {
      case None => Array[Byte](0)
      case Some(s) =>
        val h = s.host()
        val name = h.hostname().getBytes(UTF_8)
        val boot = h.bootId().getBytes(UTF_8)
        Array[Byte](1) ++ be(name.length.toLong, 2) ++ name ++ be(boot.length.toLong, 2) ++ boot ++
          be(h.pid().toLong, 4) ++ be(h.tokenFd().toLong, 4) ++ be(h.tokenInode(), 8) ++ be(s.regions().size().toLong, 4) ++
          s.regions().asScala.flatMap(e => be(e.regionId(), 8) ++ be(e.fd().toLong, 4) ++ be(e.inode(), 8) ++
            be(e.offset(), 8) ++ be(e.lengthBytes(), 8) ++ be(e.access().code().toLong, 1))
    }
  }

  private def sharedBytes(d: Description): Int = sharedLayout(d).length

  property("a description survives encode -> decode, in the documented layout") {
    forAll(genDescription) { d =>
      val buf = DescribeCodec.encode(d)
      buf.position() shouldBe 0
      val hostBytes = utf8Length(d.host())
      buf.remaining() shouldBe 2 + hostBytes + 4 + 8 + 4 + d.regions().size() * DescribeCodec.REGION_BYTES +
        sharedBytes(d) + limitsLayout(d).length
      bytesOf(buf) shouldBe layout(d)

      val back = DescribeCodec.decode(buf)
      back shouldBe d
      back.host() shouldBe d.host()
      back.regions().asScala.toSeq shouldBe d.regions().asScala.toSeq
      withClue("decode left bytes unread: ")(buf.remaining() shouldBe 0)
    }
  }

  property("decode reads from position to limit only, wherever the payload lies in a bigger buffer") {
    val gen = for {
      d <- genDescription
      before <- Gen.choose(0, 64)
      after <- Gen.choose(0, 64)
      junk <- Gen.listOfN(before + after, Arbitrary.arbitrary[Byte])
      direct <- Arbitrary.arbitrary[Boolean]
    } yield (d, before, after, junk.toArray, direct)
    forAll(gen) { case (d, before, after, junk, direct) =>
      val payload = encoded(d)
      val all = junk.take(before) ++ payload ++ junk.drop(before)
      val buf = if (direct) ByteBuffer.allocateDirect(all.length).put(all).clear() else ByteBuffer.wrap(all)
      buf.position(before).limit(before + payload.length)
      DescribeCodec.decode(buf) shouldBe d
      buf.position() shouldBe before + payload.length
      buf.limit() shouldBe before + payload.length
      buf.capacity() shouldBe before + payload.length + after
    }
  }

  property("every truncation of a valid encoding is refused, but the one that drops the whole limits part") {
    forAll(genDescription, minSuccessful(150)) { d =>
      val bytes = encoded(d)
      // Cut right after the SHM part, an encoding with limits reads as an older engine's answer.
      val olderAnswer = bytes.length - limitsLayout(d).length
      for (k <- 0 until bytes.length) {
        if (d.limits() != null && k == olderAnswer) {
          val back = DescribeCodec.decode(ByteBuffer.wrap(bytes, 0, k))
          back shouldBe new Description(d.host(), d.port(), d.epoch(), d.regions(), d.shared())
        } else {
          val e = withClue(s"prefix of $k of ${bytes.length} bytes: ") {
            intercept[FrameRejectedException](DescribeCodec.decode(ByteBuffer.wrap(bytes, 0, k)))
          }
          e.reason() should (be(Reason.INCONSISTENT_LENGTH) or be(Reason.TRUNCATED_HEADER))
        }
      }
    }
  }

  property("a valid encoding followed by bytes that are not whole tagged parts is refused") {
    val gen = for {
      d <- genDescription
      extra <- Gen.oneOf(
        // Too short for a part's tag and length.
        Gen.choose(1, 2).flatMap(n => Gen.listOfN(n, Arbitrary.arbitrary[Byte])),
        // A part whose body would run past the payload's end.
        for {
          tag <- Gen.choose(0, 255)
          have <- Gen.choose(0, 40)
          claimed <- Gen.choose(have + 1, 0xffff)
          body <- Gen.listOfN(have, Arbitrary.arbitrary[Byte])
        } yield List(tag.toByte, (claimed >>> 8).toByte, claimed.toByte) ++ body)
    } yield (d, extra.toArray)
    forAll(gen) { case (d, extra) =>
      intercept[FrameRejectedException](decode(encoded(d) ++ extra))
    }
  }

  property("parts of tags this engine does not know are skipped whole, wherever they stand") {
    val genUnknown = for {
      // Tags 1..4 are this engine's (limits, engine name, region names, not ready).
      tag <- Gen.choose(DescribeCodec.NOT_READY_TAG + 1, 255)
      n <- Gen.frequency(3 -> Gen.choose(0, 40), 1 -> Gen.const(0xffff))
      // A largest body is skipped by its length alone: one byte value repeated (65535 generated
      // bytes per part made this property take two minutes).
      body <- if (n <= 40) Gen.listOfN(n, Arbitrary.arbitrary[Byte]).map(_.toArray)
              else Arbitrary.arbitrary[Byte].map(b => Array.fill(n)(b))
    } yield part(tag, body)
    forAll(genDescription, Gen.listOf(genUnknown), Gen.listOf(genUnknown)) { (d, before, after) =>
      val bytes = encoded(d)
      val base = bytes.dropRight(limitsLayout(d).length)
      decode(base ++ before.flatten ++ limitsLayout(d) ++ after.flatten) shouldBe d
    }
  }

  /** A region name of the allowed alphabet, 1..128 bytes. */
  private val genRegionName: Gen[String] = for {
    n <- Gen.frequency(3 -> Gen.choose(1, 16), 1 -> Gen.const(RegionNames.MAX_NAME_BYTES))
    cs <- Gen.listOfN(n, Gen.oneOf("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:/-"))
  } yield cs.mkString

  property("the engine's name, region names and readiness survive a round trip") {
    val gen = for {
      d <- genDescription
      engineName <- Gen.frequency(1 -> Gen.const(""), 3 -> Gen.chooseNum(1, DescribeCodec.MAX_ENGINE_NAME_BYTES).flatMap(genHostOf))
      names <- Gen.listOfN(d.regions().size(), Gen.frequency(1 -> Gen.const(None), 2 -> genRegionName.map(Some(_))))
      ready <- Arbitrary.arbitrary[Boolean]
    } yield {
      // Names unique within the engine, as the registry keeps them.
      val seen = scala.collection.mutable.Set[String]()
      val regions = d.regions().asScala.zip(names).map { case (r, n) =>
        val name = n.filter(seen.add).orNull
        new RemoteRegion(r.regionId(), r.lengthBytes(), r.access(), name)
      }
      new Description(d.host(), d.port(), d.epoch(), regions.asJava, d.shared(), d.limits(), engineName, ready)
    }
    forAll(gen) { d =>
      decode(encoded(d)) shouldBe d
    }
  }

  property("a limits part given twice, of another length, or with a limit <= 0 is refused") {
    val gen = for {
      d <- genDescription.map(d => new Description(d.host(), d.port(), d.epoch(), d.regions(), d.shared()))
      limits <- genLimits
      how <- Gen.choose(0, 3)
      badLength <- Gen.choose(0, 40).suchThat(_ != DescribeCodec.LIMITS_BYTES)
      badValue <- Gen.chooseNum(Long.MinValue, 0L)
    } yield (d, limits, how, badLength, badValue)
    forAll(gen) { case (d, limits, how, badLength, badValue) =>
      val good = limitsLayout(new Description(d.host(), 1, 1, List.empty[RemoteRegion].asJava, null, limits))
      val body = good.drop(3)
      val damaged = how match {
        case 0 => good ++ good
        case 1 => part(DescribeCodec.LIMITS_TAG, Array.fill(badLength)(7.toByte))
        case 2 => part(DescribeCodec.LIMITS_TAG, ByteBuffer.allocate(12).putInt(badValue.toInt.min(0)).putLong(1L).array())
        case _ => part(DescribeCodec.LIMITS_TAG, ByteBuffer.allocate(12).putInt(1).putLong(badValue).array())
      }
      body.length shouldBe DescribeCodec.LIMITS_BYTES
      intercept[FrameRejectedException](decode(encoded(d) ++ damaged))
    }
  }

  property("an encoding whose region count is off by any amount is refused") {
    forAll(genDescription.map(d => new Description(d.host(), d.port(), d.epoch(), d.regions())),
      Gen.oneOf(Gen.choose(-3, 3), Gen.chooseNum(Int.MinValue, Int.MaxValue))) { (d, delta) =>
      whenever(delta != 0) {
        val bytes = encoded(d)
        val countAt = 2 + utf8Length(d.host()) + 4 + 8
        val buf = ByteBuffer.wrap(bytes)
        buf.putInt(countAt, d.regions().size() + delta)
        intercept[FrameRejectedException](decode(bytes))
      }
    }
  }

  property("an SHM export that does not match a published region is refused") {
    val gen = for {
      d <- genDescription.suchThat(d => d.shared() != null && !d.shared().regions().isEmpty)
      which <- Gen.choose(0, d.shared().regions().size() - 1)
      how <- Gen.choose(0, 3)
    } yield (d, which, how)
    forAll(gen) { case (d, which, how) =>
      val e = d.shared().regions().get(which)
      val bad = how match {
        case 0 => new SharedRegion(e.regionId(), e.fd(), e.inode(), e.offset(), e.lengthBytes() + 1, e.access())
        case 1 => new SharedRegion(e.regionId(), -1, e.inode(), e.offset(), e.lengthBytes(), e.access())
        case 2 => new SharedRegion(e.regionId(), e.fd(), e.inode(), -4096L, e.lengthBytes(), e.access())
        case _ => e // a duplicate export of the same region
      }
      val exports = new java.util.ArrayList(d.shared().regions())
      if (how == 3) exports.add(bad) else exports.set(which, bad)
      val damaged = new Description(d.host(), d.port(), d.epoch(), d.regions(), new SharedExports(d.shared().host(), exports))
      intercept[FrameRejectedException](decode(encoded(damaged)))
    }
  }

  property("a port outside 1..65535 is refused") {
    val badPort = Gen.oneOf(Gen.const(0), Gen.chooseNum(Int.MinValue, 0), Gen.chooseNum(65536, Int.MaxValue))
    forAll(genDescription, badPort) { (d, port) =>
      val bad = new Description(d.host(), port, d.epoch(), d.regions(), d.shared())
      intercept[FrameRejectedException](decode(encoded(bad)))
    }
  }

  property("a region with a length <= 0 or an access code outside 1..3 is refused") {
    val gen = for {
      d <- genDescription.suchThat(!_.regions().isEmpty)
      which <- Gen.choose(0, d.regions().size() - 1)
      badLength <- Gen.option(Gen.chooseNum(Long.MinValue, 0L))
      badAccess <- Gen.oneOf(0, 4, 5, 127, 128, 255)
    } yield (d, which, badLength, badAccess)
    forAll(gen) { case (d, which, badLength, badAccess) =>
      val bytes = encoded(d)
      val regionAt = 2 + utf8Length(d.host()) + 4 + 8 + 4 + which * DescribeCodec.REGION_BYTES
      val buf = ByteBuffer.wrap(bytes)
      badLength match {
        case Some(length) => buf.putLong(regionAt + 8, length)
        case None => buf.put(regionAt + 16, badAccess.toByte)
      }
      intercept[FrameRejectedException](decode(bytes))
    }
  }

  property("a host length of 0 or above 253 bytes is refused on decode") {
    forAll(genDescription, Gen.oneOf(Gen.const(0), Gen.choose(DescribeCodec.MAX_HOST_BYTES + 1, 0xffff))) {
      (d, hostLength) =>
        val bytes = encoded(d)
        ByteBuffer.wrap(bytes).putShort(0, hostLength.toShort)
        intercept[FrameRejectedException](decode(bytes))
    }
  }

  property("an empty host is refused on decode") {
    forAll(genDescription) { d =>
      val bytes = encoded(new Description("", d.port(), d.epoch(), d.regions(), d.shared()))
      bytes.take(2) shouldBe Array[Byte](0, 0)
      intercept[FrameRejectedException](decode(bytes))
    }
  }

  property("encode refuses a host longer than 253 UTF-8 bytes") {
    val gen = for {
      d <- genDescription
      hostBytes <- Gen.choose(DescribeCodec.MAX_HOST_BYTES + 1, 1200)
      host <- genHostOf(hostBytes)
    } yield (d, hostBytes, host)
    forAll(gen) { case (d, hostBytes, host) =>
      utf8Length(host) shouldBe hostBytes
      an[IllegalArgumentException] should be thrownBy
        DescribeCodec.encode(new Description(host, d.port(), d.epoch(), d.regions(), d.shared()))
    }
  }

  property("damaged encodings decode to a well-formed description or are refused, never another exception") {
    val gen = for {
      d <- genDescription
      flips <- Gen.choose(1, 6)
      where <- Gen.listOfN(flips, Gen.choose(0.0, 1.0))
      what <- Gen.listOfN(flips, Gen.choose(1, 255))
      cut <- Gen.frequency(3 -> Gen.const(0), 1 -> Gen.choose(1, 20))
    } yield (d, where, what, cut)
    forAll(gen, minSuccessful(500)) { case (d, where, what, cut) =>
      val bytes = encoded(d)
      // Damage the header part most of the time: that is where lengths live.
      where.zip(what).foreach { case (w, x) =>
        val span = math.min(bytes.length, 2 + utf8Length(d.host()) + 16 + 17)
        val i = math.min(bytes.length - 1, (w * span).toInt)
        bytes(i) = (bytes(i) ^ x).toByte
      }
      val damaged = bytes.dropRight(cut)
      try {
        val back = decode(damaged)
        val hostLength = utf8Length(back.host())
        back.port() should (be >= 1 and be <= 65535)
        back.regions().asScala.foreach(_.lengthBytes() should be > 0L)
        withClue("a decoded description must account for every byte: ") {
          val parts = 2 + (damaged(0) & 0xff) * 256 + (damaged(1) & 0xff) + 16 +
            back.regions().size() * DescribeCodec.REGION_BYTES + sharedBytes(back)
          wholeParts(damaged, parts) shouldBe true
        }
        hostLength should be > 0
      } catch {
        case _: FrameRejectedException => succeed
      }
    }
  }

  /** Whether `bytes` from `at` to the end are whole tagged parts, as the decoder skips them. */
  private def wholeParts(bytes: Array[Byte], at: Int): Boolean =
    if (at == bytes.length) true
    else if (at > bytes.length || bytes.length - at < 3) false
    else {
      val length = (bytes(at + 1) & 0xff) * 256 + (bytes(at + 2) & 0xff)
      wholeParts(bytes, at + 3 + length)
    }

  property("arbitrary bytes are decoded or refused, never another exception") {
    forAll(Gen.choose(0, 400).flatMap(n => Gen.listOfN(n, Arbitrary.arbitrary[Byte])), minSuccessful(500)) { bytes =>
      try {
        decode(bytes.toArray)
        succeed
      } catch {
        case _: FrameRejectedException => succeed
      }
    }
  }
}
