using System.Text.Json;
using System.Text.Json.Serialization;

namespace Queue.Client;

/// <summary>Source-generated (no reflection, trimming-safe): web defaults, nulls left out of requests so defaults apply.</summary>
[JsonSourceGenerationOptions(JsonSerializerDefaults.Web, DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull)]
[JsonSerializable(typeof(JobStatus))]
[JsonSerializable(typeof(CreatedJob))]
[JsonSerializable(typeof(UploadResult))]
[JsonSerializable(typeof(JobsPage))]
[JsonSerializable(typeof(DocumentsPage))]
[JsonSerializable(typeof(ItemsPage))]
[JsonSerializable(typeof(JobExplanation))]
[JsonSerializable(typeof(CreateJobBody))]
[JsonSerializable(typeof(NextBody))]
[JsonSerializable(typeof(NextAnswer))]
[JsonSerializable(typeof(LeaseBody))]
[JsonSerializable(typeof(FailBody))]
[JsonSerializable(typeof(ExtendBody))]
[JsonSerializable(typeof(ExtendAnswer))]
[JsonSerializable(typeof(ProblemBody))]
internal sealed partial class QueueJsonContext : JsonSerializerContext;
