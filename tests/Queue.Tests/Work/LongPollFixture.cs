using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Core;

namespace Queue.Tests.Work;

/// <summary>The shared poll is made too slow to matter, so wake-ups in these tests come from the in-process signal.</summary>
public sealed class LongPollFixture : WorkFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?> { ["Claims:PollMilliseconds"] = "60000" };
}
