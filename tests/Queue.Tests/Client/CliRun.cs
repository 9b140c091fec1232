using Queue.Client;
using Queue.Local;
using Queue.Core.Security;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Client;

public sealed record CliRun(int Exit, IReadOnlyList<string> Output, IReadOnlyList<string> Error)
{
    public override string ToString() => $"exit {Exit}\n--- stdout\n{string.Join('\n', Output.TakeLast(40))}\n--- stderr\n{string.Join('\n', Error.TakeLast(40))}";
}
