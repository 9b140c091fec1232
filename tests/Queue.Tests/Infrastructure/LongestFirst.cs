using System.Reflection;
using Xunit.Abstractions;
using Xunit.Sdk;

[assembly: TestCollectionOrderer("Queue.Tests.Infrastructure.LongestFirst", "Queue.Tests")]

namespace Queue.Tests.Infrastructure;

/// <summary>
/// The usual seconds of a test class that takes long, so <see cref="LongestFirst"/> starts it among the first: one
/// started last would run on alone while every other slot is idle.
/// </summary>
[AttributeUsage(AttributeTargets.Class)]
public sealed class TakesAboutAttribute(int seconds) : Attribute
{
    public int Seconds => seconds;
}

/// <summary>
/// Orders the test collections longest first (by <see cref="TakesAboutAttribute"/>), the rest in xUnit's own order.
/// Collections that run alone still run after all parallel ones, as xUnit always runs them.
/// </summary>
public sealed class LongestFirst : ITestCollectionOrderer
{
    private const string PerClassPrefix = "Test collection for ";

    public IEnumerable<ITestCollection> OrderTestCollections(IEnumerable<ITestCollection> testCollections) =>
        new DefaultTestCollectionOrderer().OrderTestCollections(testCollections).OrderByDescending(Seconds).ToList();

    private static int Seconds(ITestCollection collection)
    {
        if (!collection.DisplayName.StartsWith(PerClassPrefix, StringComparison.Ordinal))
        {
            return 0;
        }
        var type = typeof(LongestFirst).Assembly.GetType(collection.DisplayName[PerClassPrefix.Length..]);
        return type?.GetCustomAttribute<TakesAboutAttribute>()?.Seconds ?? 0;
    }
}
