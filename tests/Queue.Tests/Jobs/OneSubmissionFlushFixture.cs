using Queue.Tests.Infrastructure;

namespace Queue.Tests.Jobs;

/// <summary>
/// The Api with one grouped submission in flight at a time, so each group commits and reads its positions before the
/// next group's transaction starts. With two in flight (the default), a group that commits first can answer a
/// position that a slower group's lower job ids then move back by one: each answer is true when it is given, but
/// answers of overlapping groups cannot be compared with each other.
/// </summary>
public sealed class OneSubmissionFlushFixture : ApiFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?>
    {
        ["Jobs:MaxConcurrentSubmissionFlushes"] = "1",
    };
}
