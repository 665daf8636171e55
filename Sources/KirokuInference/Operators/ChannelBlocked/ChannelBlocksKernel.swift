/// Moves a value between NCHW and the channel-blocked layout (NCHW8c, KirokuKernels'
/// ChannelBlocks) where a chain of channel-blocked convolutions starts or ends: the compiler
/// inserts it (Compiler.laidOut), a block of 8 channels per loop index.
struct ChannelBlocksKernel: Kernel {
    enum Direction {
        case toBlocks, toPlanes
    }

    let batch: Int, channels: Int, plane: Int
    let direction: Direction
    let move: ChannelBlockLoops.Move

    init(batch: Int, channels: Int, plane: Int, direction: Direction, loops: ChannelBlockLoops) {
        (self.batch, self.channels, self.plane, self.direction) = (batch, channels, plane, direction)
        move = direction == .toBlocks ? loops.intoBlocks : loops.intoPlanes
    }

    func run(_ context: KernelContext) {
        let image = channels * plane
        for n in 0..<batch {
            let (x, y) = (context.inputs[0] + n * image, context.outputs[0] + n * image)
            context.team.parallelFor(channels / 8) { block in move(x, plane, block..<block + 1, y) }
        }
    }
}
