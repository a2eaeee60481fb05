package io.orbite.qualification.contract;

/** The same file transport contract over the FileChannel positioned-I/O fallback. */
class ChannelFileTransferIT extends FileTransferContract {
  @Override
  String engineName() {
    return "channel";
  }
}
