package lab.netty;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts the service port's connections as Netty sees them: opened (accepted) and closed, so the lab can show how
 * many new connections a second the upstream takes with and without a proxy's keep-alive.
 */
@ChannelHandler.Sharable
final class ConnectionCounter extends ChannelInboundHandlerAdapter {
    private final LongAdder opened = new LongAdder();
    private final LongAdder closed = new LongAdder();

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        opened.increment();
        super.channelActive(ctx);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        closed.increment();
        super.channelInactive(ctx);
    }

    long opened() {
        return opened.sum();
    }

    long closed() {
        return closed.sum();
    }
}
