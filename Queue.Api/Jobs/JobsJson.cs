using System.Text.Json;
using System.Text.Json.Serialization;
using Queue.Core.Jobs;

namespace Queue.Api.Jobs;

/// <summary>POST /jobs. Every member is nullable so that a missing field is a named 400, not a serializer error.</summary>
public sealed record CreateJobRequest(string? Name, IReadOnlyList<string>? Tasks, bool? Open, IReadOnlyList<InlineDocumentRequest>? Documents);

/// <param name="Content">The document's bytes, base64.</param>
public sealed record InlineDocumentRequest(string? Name, string? ContentType, [property: JsonConverter(typeof(Base64ContentConverter))] byte[]? Content);

/// <summary>The job status plus the documents this request stored.</summary>
public sealed record CreatedJobResponse(
    long Id, string Name, string State, DateTime CreatedAt, IReadOnlyList<string> Tasks, int Documents, ItemCounts Items,
    long? Position, bool PositionExact, OrderingInfo Ordering, DateTime? Eta, IReadOnlyList<CreatedDocument> Created)
{
    public static CreatedJobResponse From(JobStatus s, IReadOnlyList<CreatedDocument> created) =>
        new(s.Id, s.Name, s.State, s.CreatedAt, s.Tasks, s.Documents, s.Items, s.Position, s.PositionExact, s.Ordering, s.Eta, created);
}

public sealed record UploadResponse(IReadOnlyList<CreatedDocument> Documents, long ItemsAdded);

public sealed record JobsPage(IReadOnlyList<JobStatus> Jobs, string? Next);

public sealed record DocumentsPage(IReadOnlyList<DocumentInfo> Documents, string? Next);

public sealed record ItemsPage(IReadOnlyList<ItemInfo> Items, string? Next);

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web, UnmappedMemberHandling = JsonUnmappedMemberHandling.Disallow)]
[JsonSerializable(typeof(CreateJobRequest))]
[JsonSerializable(typeof(CreatedJobResponse))]
[JsonSerializable(typeof(UploadResponse))]
[JsonSerializable(typeof(JobStatus))]
[JsonSerializable(typeof(JobsPage))]
[JsonSerializable(typeof(DocumentsPage))]
[JsonSerializable(typeof(ItemsPage))]
internal sealed partial class JobsJsonContext : JsonSerializerContext;
