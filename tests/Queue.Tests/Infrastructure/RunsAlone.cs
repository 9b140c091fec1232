namespace Queue.Tests.Infrastructure;

/// <summary>
/// Tests that compare latencies run in this collection: xUnit runs it after every parallel collection, on its own, so
/// the other tests (a soak that kills processes among them) do not land on one phase of the comparison and not the other.
/// </summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class RunsAlone
{
    public const string Name = "runs alone";
}
