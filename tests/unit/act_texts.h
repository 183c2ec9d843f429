/*
 * Texts the actions' tests answer with, where tests/unit/data/ has no
 * recorded file: `ray status` as Ray 2.4x-2.5x print it (autoscaler v1,
 * the DGX Spark Ray guide's cluster; formats.md section 1, from
 * python/ray/autoscaler/_private/util.py format_info_string).
 */
#ifndef ACT_TEXTS_H
#define ACT_TEXTS_H

#define RAY_STATUS_2_NODES \
	"======== Autoscaler status: 2026-04-16 03:57:11.622696 ========\n" \
	"Node status\n" \
	"---------------------------------------------------------------\n" \
	"Active:\n" \
	" 1 node_adc07b94671c73d96f502962459d1f516a779e3808377fbde1e5e1b2\n" \
	" 1 node_09617c712f01827029c992ee84fd56531d7f205b7a25c704cdadb6cf\n" \
	"Pending:\n" \
	" (no pending nodes)\n" \
	"Recent failures:\n" \
	" (no failures)\n" \
	"\n" \
	"Resources\n" \
	"---------------------------------------------------------------\n" \
	"Total Usage:\n" \
	" 0.0/40.0 CPU\n" \
	" 0.0/2.0 GPU\n" \
	" 0B/166.80GiB memory\n" \
	" 0B/71.48GiB object_store_memory\n" \
	"\n" \
	"From request_resources:\n" \
	" (none)\n" \
	"Pending Demands:\n" \
	" (no resource demands)\n"

#define RAY_STATUS_1_NODE \
	"======== Autoscaler status: 2026-04-16 03:57:11.622696 ========\n" \
	"Node status\n" \
	"---------------------------------------------------------------\n" \
	"Active:\n" \
	" 1 node_adc07b94671c73d96f502962459d1f516a779e3808377fbde1e5e1b2\n" \
	"Pending:\n" \
	" (no pending nodes)\n" \
	"Recent failures:\n" \
	" (no failures)\n" \
	"\n" \
	"Resources\n" \
	"---------------------------------------------------------------\n" \
	"Total Usage:\n" \
	" 0.0/20.0 CPU\n" \
	" 0.0/1.0 GPU\n" \
	" 0B/83.40GiB memory\n" \
	" 0B/35.74GiB object_store_memory\n" \
	"\n" \
	"Pending Demands:\n" \
	" (no resource demands)\n"

/* A third node: a leftover container's raylet joined the new head. */
#define RAY_STATUS_3_NODES \
	"======== Autoscaler status: 2026-04-16 03:57:11.622696 ========\n" \
	"Node status\n" \
	"---------------------------------------------------------------\n" \
	"Active:\n" \
	" 1 node_adc07b94671c73d96f502962459d1f516a779e3808377fbde1e5e1b2\n" \
	" 1 node_09617c712f01827029c992ee84fd56531d7f205b7a25c704cdadb6cf\n" \
	" 1 node_5c0a3ffb2b7b0e4a43ff0bd8d1f62c0c1e9b3b3f1b8f8d8a6f0c9e7a\n" \
	"Pending:\n" \
	" (no pending nodes)\n" \
	"Recent failures:\n" \
	" (no failures)\n" \
	"\n" \
	"Resources\n" \
	"---------------------------------------------------------------\n" \
	"Total Usage:\n" \
	" 0.0/60.0 CPU\n" \
	" 0.0/3.0 GPU\n" \
	"\n" \
	"Pending Demands:\n" \
	" (no resource demands)\n"

/* GET /v1/models and a one-token completion, as vLLM's OpenAI server
 * answers them (formats.md section 8). */
#define VLLM_MODELS \
	"{\"object\":\"list\",\"data\":[{\"id\":\"/model/qwen3.5-122\"," \
	"\"object\":\"model\",\"created\":1776300000,\"owned_by\":\"vllm\"," \
	"\"root\":\"/model/qwen3.5-122\",\"parent\":null," \
	"\"max_model_len\":2048}]}"
#define VLLM_COMPLETION \
	"{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\"," \
	"\"created\":1776300000,\"model\":\"/model/qwen3.5-122\"," \
	"\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\"," \
	"\"content\":\"Hello\"},\"finish_reason\":\"length\"}]," \
	"\"usage\":{\"prompt_tokens\":9,\"total_tokens\":10," \
	"\"completion_tokens\":1}}"

#endif
